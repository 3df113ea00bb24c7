#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>

#include "config/proxy_config.hpp"
#include "limiter/time.hpp"
#include "proxy/store/redis/cluster_routing.hpp"
#include "proxy/store/redis/cross_master_charges.hpp"
#include "proxy/store/redis/over_limit_cache.hpp"
#include "proxy/store/redis/permit_releases.hpp"
#include "proxy/store/redis/redis_batching.hpp"
#include "proxy/store/redis/redis_code.hpp"
#include "proxy/store/redis/redis_lanes.hpp"
#include "proxy/store/redis/redis_leases.hpp"
#include "proxy/store/redis/redis_nodes.hpp"
#include "proxy/telemetry/metrics.hpp"

namespace sluice::store::redis {

/// One event loop's share of the Redis store, its parts wired together: lanes to the nodes, the
/// routing of keys to them, batches, permit releases, charges across masters, leases and the
/// over-limit cache. Used from that loop's thread only, so nothing in it is locked. What the
/// loops share (the options, the simulated clock, the nodes, the code, the lease holders) is
/// the store's, and must outlive it.
struct RedisLoop {
  /// `connections`: per lane, this loop's share of `pool`; `permit_ids`: its permits' ids.
  RedisLoop(const config::RedisOptions& options,
            const std::optional<limiter::TimePoint>& simulated_now, RedisNodes& nodes,
            RedisCode& code, LeaseHolders& holders, std::size_t connections, PermitIds permit_ids)
      : permits(permit_ids),
        lanes(options, code, connections, errors),
        routing(options, nodes, lanes),
        releases(options, code, lanes, routing),
        batching(options, simulated_now, code, lanes, routing, releases),
        across(options, simulated_now, lanes, batching),
        leases(options, simulated_now, code, lanes, routing, batching, permits, holders) {}

  std::optional<io::Executor> executor;    ///< The loop's, once the store has opened on it.
  telemetry::LoopCounter errors;           ///< Requests Redis could not decide.
  telemetry::LoopCounter cached_refusals;  ///< Requests refused from the over-limit cache.
  PermitIds permits;                       ///< For requests sent to Redis.
  OverLimitCache over_limit;
  RedisLanes lanes;
  ClusterRouting routing;
  PermitReleases releases;
  RedisBatching batching;
  CrossMasterCharges across;
  RedisLeases leases;
};

}  // namespace sluice::store::redis
