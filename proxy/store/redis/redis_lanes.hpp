#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string_view>
#include <vector>

#include "config/proxy_config.hpp"
#include "limiter/time.hpp"
#include "proxy/io/net.hpp"
#include "proxy/store/redis/redis_batching.hpp"
#include "proxy/store/redis/redis_code.hpp"
#include "proxy/store/redis/redis_connection.hpp"
#include "proxy/store/redis/redis_nodes.hpp"
#include "proxy/telemetry/metrics.hpp"

namespace sluice::store::redis {

/// One event loop's way to one node: its share of the pool's connections, used in turn, and the
/// batches waiting for them.
struct Lane {
  Lane(RedisNode& node_, std::size_t connections_) : node(node_), connections(connections_) {}
  RedisNode& node;
  std::vector<std::shared_ptr<RedisConnection>> connections;  ///< nullptr while reconnecting.
  std::size_t next = 0;
  LaneBatches batches;
  bool serving = true;  ///< Cluster: the loop's slot map names it a master.
};

/// Told when a lane loses a connection or cannot make one: on a Redis Cluster, a failover may
/// have handed its node's slots to a replica, which only the slot map names.
class SlotMapFollower {
 public:
  /// Reads the slot map again and follows it (at most so often).
  virtual io::Awaitable<void> refresh_slots() = 0;

 protected:
  ~SlotMapFollower() = default;
};

/// One event loop's lanes, one per node it sends to (never removed: coroutines hold them), with
/// what keeps them working: a broken connection is replaced and reconnected in the background
/// with backoff, and so is one whose last kTimeoutsBeforeReplacing commands all timed out with
/// no reply since (its host may be gone without a word, as after a failover); a failure opens
/// the node's breaker and counts the requests it cost.
class RedisLanes {
 public:
  static constexpr std::uint32_t kTimeoutsBeforeReplacing = 3;

  /// `connections`: per lane, this loop's share of `pool`. `errors`: where the requests Redis
  /// could not decide are counted.
  RedisLanes(const config::RedisOptions& options, RedisCode& code, std::size_t connections,
             telemetry::LoopCounter& errors) noexcept
      : options_(options), code_(code), connections_(connections), errors_(errors) {}

  /// On a cluster: who reads the slot map again when a connection is lost.
  void follow_failovers_with(SlotMapFollower& follower) noexcept { follower_ = &follower; }

  std::size_t size() const noexcept { return lanes_.size(); }
  Lane& operator[](std::size_t index) noexcept { return *lanes_[index]; }
  const Lane& operator[](std::size_t index) const noexcept { return *lanes_[index]; }
  /// The lanes that serve: the masters of the loop's slot map (1 on a single Redis).
  std::size_t serving() const noexcept;

  /// The index of the lane to `node`, made if the loop has none: serving at once when
  /// `serving` (a single Redis), else once start_serving() says so.
  std::uint16_t lane_to(RedisNode& node, bool serving);
  /// Opens every connection of the lane now, loading the code on each. Throws RedisError.
  io::Awaitable<void> connect(Lane& lane);
  /// The lane's node became a master of the loop's slot map: its connections are opened now
  /// (`connect_now`, throwing RedisError), or in the background.
  io::Awaitable<void> start_serving(Lane& lane, bool connect_now);
  /// The lane's node is no longer a master of the loop's slot map: its connections close.
  void stop_serving(Lane& lane);

  /// A working connection of the lane, in turn; nullptr when all are reconnecting.
  RedisConnection* pick(Lane& lane);
  /// Drops a broken connection and reconnects its slot in the background.
  void replace(Lane& lane, std::size_t slot);
  /// After a command on `connection` failed with `error`: replaces it if it broke, or if it
  /// only times out (not when Redis merely reads too slowly: no_buffer_space).
  void replace_if_lost(Lane& lane, const std::shared_ptr<RedisConnection>& connection,
                       boost::system::error_code error);

  /// `requests` requests could not be decided by the lane's node: counted, and its breaker
  /// opens (logged once).
  void failed(Lane& lane, std::string_view why, std::size_t requests = 1);
  /// A command the lane's node answered, sent with breaker ticket `ticket`: the breaker closes
  /// if no failure came since (logged).
  void answered(Lane& lane, std::uint64_t ticket);
  /// For each serving lane whose breaker is open: a PING, which closes it if answered.
  io::Awaitable<void> probe();

  /// Closes every connection; the lanes stop reconnecting. From the loop's thread, or once it
  /// has stopped.
  void close();
  bool closed() const noexcept { return closed_; }

  /// Connecting and loading the code may take longer than a decision.
  limiter::Duration connect_timeout() const noexcept;

 private:
  io::Awaitable<std::shared_ptr<RedisConnection>> connect(RedisNode& node);
  io::Awaitable<void> reconnect(Lane& lane, std::size_t slot);

  const config::RedisOptions& options_;
  RedisCode& code_;
  std::size_t connections_;
  telemetry::LoopCounter& errors_;
  SlotMapFollower* follower_ = nullptr;  ///< None on a single Redis.
  std::vector<std::unique_ptr<Lane>> lanes_;
  bool closed_ = false;
};

}  // namespace sluice::store::redis
