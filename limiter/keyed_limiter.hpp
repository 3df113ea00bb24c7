#pragma once

#include <algorithm>
#include <atomic>
#include <bit>
#include <cstddef>
#include <memory>
#include <mutex>

#include "limiter/algorithm.hpp"
#include "limiter/limiter.hpp"
#include "limiter/shard_table.hpp"
#include "limiter/spin_lock.hpp"

namespace sluice::limiter {

/// The per-key store (seed 002's sharded containers): keys are spread by hash over up to 64
/// shards, each an open-addressing table behind its own spin lock, so threads rarely meet and no
/// lock is global. A known key's decision does not allocate.
///
/// Memory is bounded and follows the live keys:
/// - a key whose state is fresh again (see Algorithm::fresh_at) is equivalent to an absent key
///   and is dropped: when a decision leaves it fresh, a little on each new key (incremental
///   sweep), when room is needed, and by collect_idle();
/// - at most `max_keys` keys in all (one atomic count, touched only when a key comes or goes).
///   When it is reached, a new key takes the place of a fresh key of its shard if one is found;
///   otherwise of the sampled key that will be fresh soonest, provided that key is not being
///   limited right now. A key that is being limited is never dropped to make room, so a flood of
///   new keys cannot hand it a fresh bucket; when every sampled key is limited, the new key's
///   request is refused (an overflow, counted).
template <Algorithm A>
class KeyedLimiter final : public Limiter {
 public:
  KeyedLimiter(A algorithm, Policy policy, std::size_t max_keys)
      : algorithm_(std::move(algorithm)),
        policy_(policy),
        max_keys_(max_keys),
        shard_count_(shard_count_for(max_keys)),
        shards_(std::make_unique<Shard[]>(shard_count_)) {}

  Verdict evaluate(KeyHash key, TimePoint now, Permits cost, Ticket& ticket) noexcept override {
    Shard& shard = shard_for(key);
    shard.lock.lock();
    ticket = Ticket{.shard = &shard, .slot = nullptr, .now = now, .cost = cost, .verdict = {}};
    Duration retry_after{};
    Slot* slot = find_or_claim(shard, key, now, retry_after);
    if (slot == nullptr) {
      ticket.verdict = {.admitted = false, .hold = {}, .retry_after = retry_after};
    } else {
      ticket.slot = slot;
      ticket.verdict = algorithm_.evaluate(slot->state, now, cost, policy_);
    }
    return ticket.verdict;
  }

  Status commit(Ticket& ticket) noexcept override { return finish(ticket, true); }

  Status abandon(Ticket& ticket) noexcept override { return finish(ticket, false); }

  /// evaluate() and commit() under one lock, without a ticket: the single-limiter fast path.
  Outcome decide(KeyHash key, TimePoint now, Permits cost) noexcept override {
    Shard& shard = shard_for(key);
    const std::lock_guard guard(shard.lock);
    Duration retry_after{};
    Slot* slot = find_or_claim(shard, key, now, retry_after);
    if (slot == nullptr) {
      return {.verdict = {.admitted = false, .hold = {}, .retry_after = retry_after}, .status = {}};
    }
    Outcome outcome{.verdict = algorithm_.evaluate(slot->state, now, cost, policy_), .status = {}};
    settle(shard, *slot, now, cost, outcome.verdict, true, outcome.status);
    return outcome;
  }

  Status charge(KeyHash key, TimePoint now, Permits cost) noexcept override {
    Shard& shard = shard_for(key);
    const std::lock_guard guard(shard.lock);
    Duration retry_after{};
    Slot* slot = find_or_claim(shard, key, now, retry_after);
    if (slot == nullptr) {
      return {};  // no room for the key (an overflow, counted): nothing to charge it in
    }
    if constexpr (requires(typename A::State state) { algorithm_.charge(state, now, cost); }) {
      algorithm_.charge(slot->state, now, cost);
    } else {
      algorithm_.commit(slot->state, now, cost, Duration::zero());
    }
    return algorithm_.status(slot->state, now);
  }

  void refund(KeyHash key, TimePoint taken_at, TimePoint now, Permits cost) noexcept override {
    if constexpr (requires(typename A::State state) {
                    algorithm_.refund(state, taken_at, now, cost);
                  }) {
      Shard& shard = shard_for(key);
      const std::lock_guard guard(shard.lock);
      const std::size_t index = shard.table.find(key);
      if (index != Table::kNotFound) {
        algorithm_.refund(shard.table.slot(index).state, taken_at, now, cost);
      }
    }
  }

  Status peek(KeyHash key, TimePoint now) noexcept override {
    Shard& shard = shard_for(key);
    const std::lock_guard guard(shard.lock);
    const std::size_t index = shard.table.find(key);
    if (index == Table::kNotFound) {
      return algorithm_.status(algorithm_.fresh_state(now), now);
    }
    return algorithm_.status(shard.table.slot(index).state, now);
  }

  bool forget(KeyHash key) noexcept override {
    Shard& shard = shard_for(key);
    const std::lock_guard guard(shard.lock);
    const std::size_t index = shard.table.find(key);
    if (index == Table::kNotFound) {
      return false;
    }
    drop(shard, index);
    return true;
  }

  void release(KeyHash key, Permits cost) noexcept override {
    if constexpr (requires(typename A::State state) { algorithm_.release(state, cost); }) {
      Shard& shard = shard_for(key);
      const std::lock_guard guard(shard.lock);
      const std::size_t index = shard.table.find(key);
      // A key released to nothing is fresh; it is left for the sweep to reclaim rather than
      // dropped now, so that a busy key is not erased and re-inserted around every request.
      if (index != Table::kNotFound) {
        algorithm_.release(shard.table.slot(index).state, cost);
      }
    }
  }

  std::size_t collect_idle(TimePoint now) override {
    std::size_t dropped = 0;
    for (std::size_t s = 0; s < shard_count_; ++s) {
      Shard& shard = shards_[s];
      const std::lock_guard guard(shard.lock);
      for (std::size_t index = 0; index < shard.table.capacity();) {
        if (is_fresh(shard.table.slot(index), now)) {
          drop(shard, index);  // a later slot may move into `index`: look again
          ++dropped;
        } else {
          ++index;
        }
      }
      shard.table.shrink_if_sparse();
    }
    return dropped;
  }

  LimiterStats stats() const noexcept override {
    LimiterStats stats{.keys = keys_.load(std::memory_order_relaxed),
                       .memory_bytes = sizeof(*this) + shard_count_ * sizeof(Shard)};
    for (std::size_t s = 0; s < shard_count_; ++s) {
      Shard& shard = shards_[s];
      const std::lock_guard guard(shard.lock);
      stats.evictions += shard.evictions;
      stats.overflows += shard.overflows;
      stats.memory_bytes += shard.table.memory_bytes();
    }
    return stats;
  }

  Permits max_cost() const noexcept override { return algorithm_.max_cost(); }

  const A& algorithm() const noexcept { return algorithm_; }

 private:
  using Table = ShardTable<typename A::State>;
  using Slot = typename Table::Slot;

  struct alignas(64) Shard {
    SpinLock lock;
    Table table;
    std::size_t cursor = 0;  ///< Where the incremental sweep and eviction sampling resume.
    std::uint64_t evictions = 0;
    std::uint64_t overflows = 0;
  };

  /// Keys sampled when a full shard must make room for a new one.
  static constexpr std::size_t kEvictionSample = 16;
  /// Slots the incremental sweep looks at per new key.
  static constexpr std::size_t kSweepPerInsert = 2;

  static std::size_t shard_count_for(std::size_t max_keys) noexcept {
    // Enough shards for threads to rarely meet; few enough that each holds a fair share of keys.
    return std::min<std::size_t>(std::bit_floor(std::max<std::size_t>(max_keys / 64, 1)), 64);
  }

  Shard& shard_for(KeyHash key) const noexcept { return shards_[key & (shard_count_ - 1)]; }

  bool is_fresh(const Slot& slot, TimePoint now) const noexcept {
    return slot.key.get() != 0 && algorithm_.fresh_at(slot.state, now) <= now;
  }

  Status finish(Ticket& ticket, bool consume) noexcept {
    auto& shard = *static_cast<Shard*>(ticket.shard);
    Status status{};
    if (auto* slot = static_cast<Slot*>(ticket.slot)) {
      settle(shard, *slot, ticket.now, ticket.cost, ticket.verdict, consume, status);
    }
    shard.lock.unlock();
    return status;
  }

  /// Commits an admitted verdict (if `consume`), reads the status, and drops the key if it is
  /// left fresh (a new key whose request was refused, say). Under the shard lock.
  void settle(Shard& shard, Slot& slot, TimePoint now, Permits cost, const Verdict& verdict,
              bool consume, Status& status) noexcept {
    const bool consumed = consume && verdict.admitted;
    if (consumed) {
      algorithm_.commit(slot.state, now, cost, verdict.hold);
    }
    status = algorithm_.status(slot.state, now);
    // An admitted commit leaves something behind; only otherwise can the state be fresh.
    if (!consumed && is_fresh(slot, now)) {
      drop(shard, shard.table.index_of(slot));
    }
  }

  /// Erases a key for good. (make_room erases without this: the new key inherits the place.)
  void drop(Shard& shard, std::size_t index) noexcept {
    shard.table.erase(index);
    keys_.fetch_sub(1, std::memory_order_relaxed);
  }

  Slot* find_or_claim(Shard& shard, KeyHash key, TimePoint now, Duration& retry_after) {
    std::size_t index = shard.table.find(key);
    if (index != Table::kNotFound) {
      return &shard.table.slot(index);
    }
    sweep(shard, now, kSweepPerInsert);
    // Reserve the new key's place in the count first, so that racing shards cannot overshoot.
    if (keys_.fetch_add(1, std::memory_order_relaxed) >= max_keys_) {
      keys_.fetch_sub(1, std::memory_order_relaxed);
      if (!make_room(shard, now, retry_after)) {  // on success the new key takes a dropped place
        return nullptr;
      }
    }
    index = shard.table.insert(key, algorithm_.fresh_state(now));
    return &shard.table.slot(index);
  }

  void sweep(Shard& shard, TimePoint now, std::size_t budget) noexcept {
    const std::size_t capacity = shard.table.capacity();
    for (std::size_t seen = 0; seen < budget && capacity != 0; ++seen) {
      shard.cursor %= capacity;
      if (is_fresh(shard.table.slot(shard.cursor), now)) {
        drop(shard, shard.cursor);
      } else {
        ++shard.cursor;
      }
    }
  }

  bool make_room(Shard& shard, TimePoint now, Duration& retry_after) noexcept {
    const std::size_t capacity = shard.table.capacity();
    std::size_t best = Table::kNotFound;
    TimePoint best_fresh_at = kNever;
    TimePoint soonest = kNever;
    std::size_t sampled = 0;
    for (std::size_t seen = 0; seen < capacity && sampled < kEvictionSample; ++seen) {
      const std::size_t index = (shard.cursor + seen) % capacity;
      const Slot& slot = shard.table.slot(index);
      if (slot.key.get() == 0) {
        continue;
      }
      ++sampled;
      const TimePoint fresh_at = algorithm_.fresh_at(slot.state, now);
      if (fresh_at <= now) {
        shard.cursor = index;
        shard.table.erase(index);
        return true;
      }
      soonest = std::min(soonest, fresh_at);
      const bool limited = !algorithm_.evaluate(slot.state, now, 1, Policy{}).admitted;
      if (!limited && fresh_at < best_fresh_at) {
        best = index;
        best_fresh_at = fresh_at;
      }
    }
    shard.cursor = (shard.cursor + kEvictionSample) % capacity;
    if (best != Table::kNotFound) {
      shard.table.erase(best);
      ++shard.evictions;
      return true;
    }
    ++shard.overflows;
    retry_after = soonest == kNever ? Duration(std::chrono::seconds(1)) : soonest - now;
    return false;
  }

  A algorithm_;
  Policy policy_;
  std::size_t max_keys_;
  std::size_t shard_count_;
  std::unique_ptr<Shard[]> shards_;
  std::atomic<std::size_t> keys_{0};
};

}  // namespace sluice::limiter
