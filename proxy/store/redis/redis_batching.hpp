#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <vector>

#include "config/proxy_config.hpp"
#include "limiter/time.hpp"
#include "proxy/io/net.hpp"
#include "proxy/store/redis/decision_batch.hpp"
#include "proxy/telemetry/metrics.hpp"

namespace sluice::store::redis {

// A lane holds its batches (redis_lanes.hpp includes this header); batching sends them on the
// lane's connections.
struct Lane;
class RedisLanes;
class ClusterRouting;
class PermitReleases;
class RedisCode;

/// Requests that arrive together on one event loop, decided by one call of decide.lua per lane:
/// a request opens a batch if none is open, and the batch is sent once the loop has run what was
/// ready at that moment, so a lone request never waits for others. Calls in flight are bounded
/// per lane; while they are all out, arriving requests wait in the open batch, so batches grow
/// with the load and Redis wakes once per batch, not per request.
class RedisBatching {
 public:
  /// Requests in one call at most; more make another batch.
  static constexpr std::size_t kMaxBatch = 128;
  /// Calls of decide.lua in flight per lane at most. A request that finds fewer in flight is
  /// sent after one turn of the loop.
  static constexpr std::size_t kCallsInFlight = 8;
  /// Batches waiting for a call in flight to come back, at most, per lane. While Redis hangs
  /// with its connection up, requests beyond kCallsInFlight + kQueuedBatches batches follow
  /// on_error at once (counted as errors) instead of piling up until the timeout.
  static constexpr std::size_t kQueuedBatches = 8;

  /// `simulated_now`: the store's, read at each call (nullopt: Redis's clock).
  RedisBatching(const config::RedisOptions& options,
                const std::optional<limiter::TimePoint>& simulated_now, RedisCode& code,
                RedisLanes& lanes, ClusterRouting& routing, PermitReleases& releases) noexcept
      : options_(options),
        simulated_now_(simulated_now),
        code_(code),
        lanes_(lanes),
        routing_(routing),
        releases_(releases) {}

  /// Adds `waiter` to the lane's open batch, on the loop of `executor`, and returns the wait for
  /// the batch's answer (await it at once): `waiter.decided`, or `waiter.redirected` when the
  /// lane's node no longer serves one of its keys' slots. Not a coroutine: the waiting request
  /// needs no frame of its own here.
  auto wait_in_batch(Lane& lane, const io::Executor& executor, BatchWaiter& waiter) {
    return join_batch(lane, executor, waiter).wait();
  }
  /// Adds a finished request's settlement to the lane's open batch (BatchCall::add_settlement),
  /// on the loop of `executor`; nobody waits for it. A settlement that Redis does not take (it
  /// fails, times out, or no longer serves the key's slot) is lost and counted.
  void settle(Lane& lane, const io::Executor& executor, std::span<const Settlement> settled,
              std::uint64_t permit, std::int64_t decided_at, limiter::TimePoint now);

  /// Adds a lease's renewal to the lane's open batch (BatchCall::add_renewal), on the loop of
  /// `executor`: its sink hears the answer once the call is over, or that none came.
  void renew(Lane& lane, const io::Executor& executor, const LeaseRenewal& renewal,
             std::string_view redis_key, const limiter::LimiterOptions& options,
             limiter::TimePoint now);

  /// Calls of decide.lua sent, and the requests they carried.
  const telemetry::LoopCounter& calls() const noexcept { return calls_; }
  const telemetry::LoopCounter& requests_in_calls() const noexcept { return requests_in_calls_; }
  /// Settlements Redis took; those lost: that Redis did not take, and that `on_error` dropped
  /// (lose_settlement()).
  const telemetry::LoopCounter& settlements() const noexcept { return settlements_; }
  const telemetry::LoopCounter& lost_settlements() const noexcept { return lost_settlements_; }
  void lose_settlement() noexcept { lost_settlements_.add(); }

 private:
  /// Adds `waiter` to the lane's open batch (a new one if none is open): the batch to wait in.
  DecisionBatch& join_batch(Lane& lane, const io::Executor& executor, BatchWaiter& waiter);
  /// Calls `add(batch)` on the lane's open batch, and closes it once it is full.
  template <class Add>
  DecisionBatch& add_to_open_batch(Lane& lane, const io::Executor& executor, Add add);
  /// The lane's open batch, or a new one, sent once the loop has run what is ready now.
  DecisionBatch& open_batch(Lane& lane, const io::Executor& executor);
  /// Sends the lane's queued batches one after the other, after a turn of the loop, and wakes
  /// each one's waiters with their answers.
  io::Awaitable<void> send_batches(Lane& lane);
  /// One call of decide.lua for `batch`; false when Redis failed.
  io::Awaitable<bool> call(Lane& lane, DecisionBatch& batch);

  const config::RedisOptions& options_;
  const std::optional<limiter::TimePoint>& simulated_now_;
  RedisCode& code_;
  RedisLanes& lanes_;
  ClusterRouting& routing_;
  PermitReleases& releases_;
  telemetry::LoopCounter calls_;
  telemetry::LoopCounter requests_in_calls_;
  telemetry::LoopCounter settlements_;
  telemetry::LoopCounter lost_settlements_;
};

/// A lane's batches: the open one, those waiting for a call, and spares kept for reuse, so that
/// a warm loop makes none.
struct LaneBatches {
  DecisionBatch* open = nullptr;  ///< Takes the requests that arrive until it is sent.
  /// Waiting to be sent, oldest first; `open` is the last. At most kQueuedBatches.
  std::vector<DecisionBatch*> queued;
  std::size_t senders = 0;  ///< Coroutines sending batches, one call each: kCallsInFlight at most.
  std::vector<std::unique_ptr<DecisionBatch>> made;  ///< Every batch made, queued or spare.
  std::vector<DecisionBatch*> spare;

  /// No room for another request: none is open, and kQueuedBatches wait already.
  bool full() const noexcept {
    return open == nullptr && queued.size() >= RedisBatching::kQueuedBatches;
  }
};

}  // namespace sluice::store::redis
