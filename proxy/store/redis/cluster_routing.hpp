#pragma once

#include <array>
#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "config/proxy_config.hpp"
#include "proxy/io/net.hpp"
#include "proxy/pipeline/pipeline.hpp"
#include "proxy/store/redis/cluster_slots.hpp"
#include "proxy/store/redis/redis_decision.hpp"
#include "proxy/store/redis/redis_lanes.hpp"
#include "proxy/store/redis/redis_nodes.hpp"

namespace sluice::store::redis {

/// Per charge of a request, the index of its master's lane in its loop.
using LaneIndices = std::array<std::uint16_t, limiter::kMaxChargesPerRequest>;

/// Which of a loop's lanes serves a key. On a single Redis, its one lane. On a Redis Cluster
/// (`cluster: true`), the master of the key's slot, as the loop's slot map (CLUSTER SLOTS) says:
/// read from the seed at open, and read again (from any node that answers) when a master does not
/// serve a key's slot and while a master's connection is down (a failover names a new one).
/// Masters that join get a lane; those that leave stop being served.
class ClusterRouting final : public SlotMapFollower {
 public:
  /// The slot map is read again at most this often (per loop), unless a request that was sent
  /// to the wrong master waits for it.
  static constexpr std::chrono::milliseconds kSlotMapInterval{100};

  /// On a single Redis, gives the loop its one lane.
  ClusterRouting(const config::RedisOptions& options, RedisNodes& nodes, RedisLanes& lanes);

  /// Opens the loop's lanes: the single Redis's, or (cluster) reads the slot map from the seed
  /// and connects to every master. Throws RedisError naming the URL (password redacted): Redis
  /// refused, the seed is not in cluster mode, the cluster's slots are not all served.
  io::Awaitable<void> open();

  /// Reads the slot map again and follows it; at most every kSlotMapInterval. A call while one
  /// is under way waits for it.
  io::Awaitable<void> refresh_slots() override;

  /// Which lane each of `charges` goes to; false when a slot has no master.
  bool route(const pipeline::Charges& charges, LaneIndices& lanes) const noexcept {
    for (std::size_t i = 0; i < charges.count; ++i) {
      lanes[i] = lane_of(charges.shared_key[i]);
      if (lanes[i] == SlotMap::kNone) {
        return false;
      }
    }
    return true;
  }
  /// The lane of a limiter's key (its shared hash), or of a Redis key (its text); SlotMap::kNone
  /// when no master serves its slot.
  std::uint16_t lane_of(limiter::KeyHash shared_key) const noexcept {
    return options_.cluster ? lane_of_slot_[cluster_slot(shared_key)] : 0;
  }
  std::uint16_t lane_of(std::string_view redis_key) const noexcept {
    return options_.cluster ? lane_of_slot_[key_slot(redis_key)] : 0;
  }

 private:
  /// Reads the slot map from `connection` (nullopt, with `why`, when it cannot).
  io::Awaitable<std::optional<SlotMap>> read_slots(RedisConnection& connection, std::string& why);
  /// Makes the loop's lanes follow `map`: new masters get a lane (connected in the background
  /// unless `connect_now`), masters no longer in it stop being served.
  io::Awaitable<void> follow(const SlotMap& map, bool connect_now);

  const config::RedisOptions& options_;
  RedisNodes& nodes_;
  RedisLanes& lanes_;
  std::vector<std::uint16_t> lane_of_slot_;  ///< Cluster: per slot, its master's lane or kNone.
  bool refreshing_ = false;
  std::optional<io::Timer> refreshed_;  ///< Cancelled when a slot map refresh ends.
  std::chrono::steady_clock::time_point refreshed_at_{};
};

}  // namespace sluice::store::redis
