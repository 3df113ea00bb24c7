#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <span>
#include <string>

#include "limiter/limiter.hpp"
#include "limiter/limiter_options.hpp"
#include "limiter/time.hpp"

namespace sluice::store::redis {

/// Permits this replica took from Redis ahead of its requests (`lease:` on a limiter), per key:
/// a request whose every limiter holds a lease with room is admitted from here, without a round
/// trip. A lease is spent by its own loop only, until it ends (`until`), and renewed while it
/// still holds half; what is left of it is given back to Redis when the loop lets it go
/// (shutdown, an evicted entry).
///
/// One per event loop (no lock); fixed-size, 4-way set-associative, so that keys whose hashes
/// meet rarely push each other out (a lease pushed out is given back). The entries keep their
/// buffers, so granting a lease allocates only when a key is longer than any its entry held.
class LeaseTable {
 public:
  static constexpr std::size_t kEntries = 4096;
  static constexpr std::size_t kWays = 4;

  struct Lease {
    std::uint64_t key = 0;  ///< redis_key_id(); 0: empty.
    limiter::Permits left = 0;
    limiter::Permits size = 0;  ///< What it holds when full: the limiter's lease_size().
    limiter::TimePoint until = limiter::kAlways;  ///< Not spent from after this (proxy clock).
    limiter::Status status{};  ///< Redis's status of the key when the lease was taken.
    limiter::TimePoint taken_at = limiter::kAlways;
    // What giving it back needs (refund.lua), kept apart from the configuration, which a
    // reload may free while the lease lives on.
    std::string redis_key;
    limiter::LimiterOptions options{};
    /// Redis's time when it was taken (µs); of a renewed lease, when the first of its permits
    /// were, so that giving it back errs towards giving back less.
    std::int64_t decided_at = 0;
    /// A fixed window's end on Redis's clock (µs): a renewal decided in a later window does not
    /// mix with this one's permits.
    std::int64_t window_end = 0;
    std::uint64_t permit = 0;  ///< The id its permits were taken under.
  };

  LeaseTable()
      : entries_(std::make_unique<std::array<Lease, kEntries>>()),
        taking_(std::make_unique<std::array<std::uint64_t, kEntries>>()) {}

  /// The lease of `key` if it holds `cost` permits and has not ended at `now`.
  Lease* usable(std::uint64_t key, limiter::Permits cost, limiter::TimePoint now) noexcept {
    for (Lease& lease : set_of(key)) {
      if (lease.key == key) {
        return lease.left >= cost && now < lease.until ? &lease : nullptr;
      }
    }
    return nullptr;
  }

  /// The entry that holds `key`'s lease, whatever is left of it; nullptr when none does.
  Lease* find(std::uint64_t key) noexcept {
    for (Lease& lease : set_of(key)) {
      if (lease.key == key) {
        return &lease;
      }
    }
    return nullptr;
  }

  /// The entry for a new lease of `key`: the key's own, else an empty or ended one of its set,
  /// else the one that ends first. If it holds permits, give them back before overwriting it.
  Lease& entry_for(std::uint64_t key, limiter::TimePoint now) noexcept {
    std::span<Lease> set = set_of(key);
    Lease* chosen = &set[0];
    for (Lease& lease : set) {
      if (lease.key == key) {
        return lease;
      }
      const bool free = lease.left == 0 || lease.until <= now;
      const bool chosen_free = chosen->left == 0 || chosen->until <= now;
      if ((free && !chosen_free) || (free == chosen_free && lease.until < chosen->until)) {
        chosen = &lease;
      }
    }
    return *chosen;
  }

  /// The key a lease is being taken for in a call in flight, per slot of `key`: one call at a
  /// time per key, so that the requests that arrive meanwhile wait for it instead of each
  /// taking one. (Two keys may share a slot: then one of them waits or asks Redis, no more.)
  std::uint64_t& taking(std::uint64_t key) noexcept { return (*taking_)[key % kEntries]; }

  /// Calls `f(lease)` for every lease with permits left.
  template <class F>
  void for_each_held(F&& f) {
    for (Lease& lease : *entries_) {
      if (lease.key != 0 && lease.left != 0) {
        f(lease);
      }
    }
  }

 private:
  std::span<Lease> set_of(std::uint64_t key) noexcept {
    return {entries_->data() + (key % (kEntries / kWays)) * kWays, kWays};
  }

  std::unique_ptr<std::array<Lease, kEntries>> entries_;
  std::unique_ptr<std::array<std::uint64_t, kEntries>> taking_;
};

}  // namespace sluice::store::redis
