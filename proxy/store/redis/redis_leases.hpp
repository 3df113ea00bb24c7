#pragma once

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "config/proxy_config.hpp"
#include "limiter/time.hpp"
#include "proxy/io/net.hpp"
#include "proxy/pipeline/pipeline.hpp"
#include "proxy/store/redis/cluster_routing.hpp"
#include "proxy/store/redis/decision_batch.hpp"
#include "proxy/store/redis/lease_table.hpp"
#include "proxy/store/redis/permit_releases.hpp"
#include "proxy/store/redis/redis_batching.hpp"
#include "proxy/store/redis/redis_code.hpp"
#include "proxy/store/redis/redis_decision.hpp"
#include "proxy/store/redis/redis_lanes.hpp"
#include "proxy/telemetry/metrics.hpp"

namespace sluice::store::redis {

/// The permits of one lease of `limiter` (its `lease:`, at most what its key can hold at once);
/// 0 when it does not lease.
limiter::Permits lease_size(const config::LimiterConfig& limiter,
                            const limiter::LimiterOptions& options) noexcept;
/// Until when a lease taken at `now`, with Redis's `status` of its key, may be spent: a fixed
/// window's until the window ends (so it is spent in the window that counted it, and fixed
/// windows never overshoot); another limiter's until it is spent (kNever). However old, a lease
/// holds at most its permits, which alone bounds what a replica can spend beyond the limit over
/// any span (docs/operations.md, "Leases"); and permits that outlive their key's memory of them
/// (the window, the bucket's refill) weigh on nobody else meanwhile.
limiter::TimePoint lease_until(const limiter::LimiterOptions& options,
                               const limiter::Status& status, limiter::TimePoint now) noexcept;

/// The event loops, of every replica, that hold leases on the store, as they count themselves
/// in it: a replica, once it leases, keeps a heartbeat for each of its loops in
/// `{prefix}lease-holders`. Shared by this replica's loops.
class LeaseHolders {
 public:
  /// `replica`: random, this replica's name among the holders; `loops`: its event loops.
  LeaseHolders(std::uint64_t replica, std::size_t loops) noexcept
      : replica_(replica), loops_(loops) {}

  /// 0 before this replica leases.
  std::uint64_t count() const noexcept { return count_.load(std::memory_order_relaxed); }
  /// True for the first loop that leases: it keeps the heartbeat for all. Until the first beat,
  /// this replica's loops are counted alone.
  bool first_to_lease() noexcept {
    if (started_.exchange(true)) {
      return false;
    }
    count_ = loops_;
    return true;
  }
  /// What Redis counted: never fewer than this replica's own loops.
  void counted(long long holders) noexcept {
    count_ = static_cast<std::uint64_t>(std::max(static_cast<long long>(loops_), holders));
  }
  std::uint64_t replica() const noexcept { return replica_; }
  std::size_t loops() const noexcept { return loops_; }

 private:
  std::uint64_t replica_;
  std::size_t loops_;
  std::atomic<std::uint64_t> count_{0};
  std::atomic<bool> started_{false};
};

/// Per charge, the permits of a lease it takes with the request (0: none).
using TopUps = std::array<limiter::Permits, limiter::kMaxChargesPerRequest>;

/// Leases (`lease:` on a limiter): permits a loop takes from Redis ahead of its requests, with
/// a request that needs a round trip anyway (a top-up of its costs), and spends without one
/// while every limiter of a request holds room. A lease spent down to half is renewed in the
/// background, topped up to its size in the loop's next batch, so that a key in steady use
/// never waits for one. Near the limit a lease is refused, and the request is decided exactly.
/// What is left of a lease goes back to Redis when its entry is reused and at shutdown. The
/// leases live in a LeaseTable, made when a leased limiter is first met. One per event loop.
class RedisLeases final : public LeaseRenewal::Sink {
 public:
  static constexpr std::chrono::seconds kHeartbeat{1};

  RedisLeases(const config::RedisOptions& options,
              const std::optional<limiter::TimePoint>& simulated_now, RedisCode& code,
              RedisLanes& lanes, const ClusterRouting& routing, RedisBatching& batching,
              PermitIds& permits, LeaseHolders& holders) noexcept
      : options_(options),
        simulated_now_(simulated_now),
        code_(code),
        lanes_(lanes),
        routing_(routing),
        batching_(batching),
        permits_(permits),
        holders_(holders) {}
  RedisLeases(const RedisLeases&) = delete;
  RedisLeases& operator=(const RedisLeases&) = delete;
  RedisLeases(RedisLeases&&) = delete;
  RedisLeases& operator=(RedisLeases&&) = delete;
  ~RedisLeases() = default;

  /// Readies the loop's leases; on its executor, before it serves.
  void open(const io::Executor& executor) {
    granted_.emplace(executor, io::Timer::time_point::max());
  }
  /// Whether the loop has met a leased limiter: only then may a request be answered by leases.
  bool active() const noexcept { return table_ != nullptr; }
  /// Whether some limiter of a request leases.
  static bool any_leases(const pipeline::Decision& decision, const pipeline::Charges& charges) {
    for (std::size_t i = 0; i < charges.count; ++i) {
      if (decision.reports[charges.report[i]].limiter->lease != 0) {
        return true;
      }
    }
    return false;
  }

  /// Admits a request from its limiters' leases if every one of them leases and holds room, at
  /// `now` (the store's clock, simulated or not); false when it must go to Redis. Renews the
  /// leases it leaves at half or less.
  bool answer(const pipeline::Decision& decision, const pipeline::Charges& charges,
              const KeyIds& ids, limiter::TimePoint now, pipeline::ChargeResult& result);
  /// Whether every limiter of a request leases, and holds room or, without room, has a lease
  /// being taken or renewed (at least one): then the request waits for it (wait_for_grant())
  /// rather than ask Redis.
  bool waits_for_lease(const pipeline::Decision& decision, const pipeline::Charges& charges,
                       limiter::TimePoint now);
  /// Resumes when a call that took leases ends; each waiter then looks whether its own came.
  auto wait_for_grant() { return granted_->async_wait(io::use_nothrow); }
  /// Which leased limiters of a request take a new lease with it (their lease is out), in
  /// `added`, and `topped`, the charges with those leases added to their costs. False when none
  /// does.
  bool top_ups(const pipeline::Decision& decision, const pipeline::Charges& charges,
               limiter::TimePoint now, pipeline::Charges& topped, TopUps& added);
  /// Records the leases a request took, if Redis admitted it with them; either way, lets the
  /// next request take a lease of those keys, and wakes those that waited.
  void grant(const pipeline::Decision& decision, const pipeline::Charges& charges,
             const TopUps& added, pipeline::ChargeResult& result, limiter::TimePoint now);
  /// Gives back what is left of every lease, one refund after the other (shutdown).
  io::Awaitable<void> give_back_all();
  /// Adds a renewal's permits to its lease (batching calls it once the renewal's call is over).
  void renewed(const LeaseRenewal& renewal) override;

  /// Requests admitted from leases, without a round trip; leases taken (renewals included).
  const telemetry::LoopCounter& hits() const noexcept { return hits_; }
  const telemetry::LoopCounter& taken() const noexcept { return taken_; }

 private:
  /// Asks Redis, in the loop's next batch, for what `lease` lacks of its size; one renewal per
  /// key at a time. Nothing when its node cannot take it now (the lease then runs out, and a
  /// request takes the next one).
  void renew(LeaseTable::Lease& lease, limiter::TimePoint now);
  /// Gives back what is left of `lease` (refund.lua), in the background; empties it.
  void give_back(LeaseTable::Lease& lease);
  io::Awaitable<void> run_refund(std::shared_ptr<RedisConnection> connection,
                                 std::vector<std::string> command);
  /// Counts this replica's loops in Redis every kHeartbeat, and reads how many hold leases in
  /// all.
  io::Awaitable<void> heartbeat();

  const config::RedisOptions& options_;
  const std::optional<limiter::TimePoint>& simulated_now_;
  RedisCode& code_;
  RedisLanes& lanes_;
  const ClusterRouting& routing_;
  RedisBatching& batching_;
  PermitIds& permits_;
  LeaseHolders& holders_;
  std::unique_ptr<LeaseTable> table_;
  std::optional<io::Timer> granted_;  ///< Cancelled when a call that took leases ends.
  telemetry::LoopCounter hits_;
  telemetry::LoopCounter taken_;
};

}  // namespace sluice::store::redis
