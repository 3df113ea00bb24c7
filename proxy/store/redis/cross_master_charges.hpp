#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>

#include "config/proxy_config.hpp"
#include "limiter/time.hpp"
#include "proxy/io/net.hpp"
#include "proxy/pipeline/pipeline.hpp"
#include "proxy/store/redis/cluster_routing.hpp"
#include "proxy/store/redis/decision_batch.hpp"
#include "proxy/store/redis/redis_batching.hpp"
#include "proxy/store/redis/redis_decision.hpp"
#include "proxy/store/redis/redis_lanes.hpp"
#include "proxy/telemetry/metrics.hpp"

namespace sluice::store::redis {

/// A request whose limiters live on several masters of a Redis Cluster: charged on each, in each
/// master's batch, then refunded (refund.lua) where it was admitted if another master refused
/// it. All or nothing, as decide.lua is on one master, at the cost of one more round trip for
/// such a refusal. One per event loop.
class CrossMasterCharges {
 public:
  CrossMasterCharges(const config::RedisOptions& options,
                     const std::optional<limiter::TimePoint>& simulated_now, RedisLanes& lanes,
                     RedisBatching& batching) noexcept
      : options_(options), simulated_now_(simulated_now), lanes_(lanes), batching_(batching) {}

  /// Charges the request on the lanes `lanes` names for its charges, under `permit`, into
  /// `result`; as `on_error` says if a master could not decide its part.
  io::Awaitable<void> charge(const pipeline::Decision& decision, const pipeline::Charges& charges,
                             const LaneIndices& lanes, std::uint64_t permit, limiter::TimePoint now,
                             pipeline::ChargeResult& result);

  /// Requests refunded on one master because another refused them.
  const telemetry::LoopCounter& refunds() const noexcept { return refunds_; }

 private:
  /// One part of charge(): waits in its lane's batch, then counts itself done.
  io::Awaitable<void> decide_part(Lane& lane, BatchWaiter& waiter, std::size_t& pending,
                                  io::Timer& done);
  /// Sends one call of refund.lua on `lane`, waits for it, and reads the refunded charges'
  /// statuses into `result`.
  io::Awaitable<void> refund(Lane& lane, RefundCall call, pipeline::ChargeResult& result);

  const config::RedisOptions& options_;
  const std::optional<limiter::TimePoint>& simulated_now_;
  RedisLanes& lanes_;
  RedisBatching& batching_;
  telemetry::LoopCounter refunds_;
};

}  // namespace sluice::store::redis
