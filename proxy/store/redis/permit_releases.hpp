#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "config/proxy_config.hpp"
#include "proxy/io/net.hpp"
#include "proxy/pipeline/pipeline.hpp"
#include "proxy/store/redis/cluster_routing.hpp"
#include "proxy/store/redis/redis_code.hpp"
#include "proxy/store/redis/redis_connection.hpp"
#include "proxy/store/redis/redis_decision.hpp"
#include "proxy/store/redis/redis_lanes.hpp"

namespace sluice::store::redis {

/// The ids a loop's requests (and lease renewals) take their permits in Redis under, unique per
/// request across replicas: the process's random base, a count per loop, the loop's index.
class PermitIds {
 public:
  PermitIds(std::uint64_t base, std::size_t loop) noexcept : base_(base), loop_(loop) {}
  std::uint64_t next() noexcept { return base_ + (++issued_ << 16) + loop_; }

 private:
  std::uint64_t base_;
  std::uint64_t loop_;
  std::uint64_t issued_ = 0;
};

/// Gives back concurrency permits held in Redis (release.lua), in the background, each on its
/// key's lane: a finished request's, and those a decision that timed out may still take when
/// Redis wakes up. A release that fails is not retried: the permit's lease ends it
/// (kConcurrencyLease). One per event loop.
class PermitReleases {
 public:
  PermitReleases(const config::RedisOptions& options, RedisCode& code, RedisLanes& lanes,
                 const ClusterRouting& routing) noexcept
      : options_(options), code_(code), lanes_(lanes), routing_(routing) {}

  /// The concurrency permits `charges` take, as a finished request gives them back.
  static std::vector<pipeline::Permit> permits_of(const pipeline::Decision& decision,
                                                  const pipeline::Charges& charges);
  /// Gives back `permits` held under `id`.
  void send(const std::vector<pipeline::Permit>& permits, std::uint64_t id);

 private:
  io::Awaitable<void> run(std::shared_ptr<RedisConnection> connection,
                          std::vector<ReleaseCall> releases);

  const config::RedisOptions& options_;
  RedisCode& code_;
  RedisLanes& lanes_;
  const ClusterRouting& routing_;
};

}  // namespace sluice::store::redis
