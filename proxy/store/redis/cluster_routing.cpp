#include "proxy/store/redis/cluster_routing.hpp"

#include <array>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>

#include "config/url.hpp"

namespace sluice::store::redis {

ClusterRouting::ClusterRouting(const config::RedisOptions& options, RedisNodes& nodes,
                               RedisLanes& lanes)
    : options_(options), nodes_(nodes), lanes_(lanes) {
  if (options_.cluster) {
    lanes_.follow_failovers_with(*this);
  } else {
    lanes_.lane_to(nodes_.single(), true);
  }
}

io::Awaitable<std::optional<SlotMap>> ClusterRouting::read_slots(RedisConnection& connection,
                                                                 std::string& why) {
  const std::array<std::string_view, 2> cluster_slots{"CLUSTER", "SLOTS"};
  const RedisReply reply = co_await connection.command(cluster_slots, lanes_.connect_timeout());
  if (reply.error || reply.value.is_error()) {
    why = reason_of(reply);
    co_return std::nullopt;
  }
  auto map = read_slot_map(reply.value, options_.endpoint.host);
  if (!map) {
    why = "unexpected CLUSTER SLOTS reply";
  }
  co_return map;
}

io::Awaitable<void> ClusterRouting::open() {
  refreshed_.emplace(co_await net::this_coro::executor, io::Timer::time_point::max());
  if (!options_.cluster) {
    co_await lanes_.connect(lanes_[0]);
    co_return;
  }
  // The seed may be a replica: it is only asked for the map.
  const auto seed =
      co_await RedisConnection::open(options_.endpoint, options_.url, lanes_.connect_timeout());
  std::string why;
  const auto map = co_await read_slots(*seed, why);
  seed->close();
  if (!map) {
    if (why.find("cluster support disabled") != why.npos) {
      throw RedisError("Redis at " + config::redact_url(options_.url) +
                       " is not in cluster mode, but store.redis.cluster is true (" + why + ")");
    }
    throw RedisError("Redis at " + config::redact_url(options_.url) +
                     ": CLUSTER SLOTS failed: " + why);
  }
  if (const std::string gap = map->uncovered(); !gap.empty()) {
    throw RedisError("Redis Cluster at " + config::redact_url(options_.url) + ": slots " + gap +
                     " are served by no master");
  }
  co_await follow(*map, true);
  refreshed_at_ = std::chrono::steady_clock::now();
}

io::Awaitable<void> ClusterRouting::follow(const SlotMap& map, bool connect_now) {
  std::vector<std::uint16_t> lane_of_master;
  for (const std::string& address : map.masters) {
    lane_of_master.push_back(lanes_.lane_to(nodes_.at(address), false));
  }
  std::vector<bool> serving(lanes_.size(), false);
  lane_of_slot_.assign(kClusterSlots, SlotMap::kNone);
  for (std::size_t slot = 0; slot < kClusterSlots; ++slot) {
    if (map.owner[slot] != SlotMap::kNone) {
      lane_of_slot_[slot] = lane_of_master[map.owner[slot]];
      serving[lane_of_slot_[slot]] = true;
    }
  }
  for (std::size_t i = 0; i < lanes_.size(); ++i) {
    Lane& lane = lanes_[i];
    if (lane.serving == serving[i]) {
      continue;
    }
    if (serving[i]) {
      co_await lanes_.start_serving(lane, connect_now);
    } else {
      lanes_.stop_serving(lane);
    }
  }
}

io::Awaitable<void> ClusterRouting::refresh_slots() {
  if (refreshing_) {
    co_await refreshed_->async_wait(io::use_nothrow);
    co_return;
  }
  const auto now = std::chrono::steady_clock::now();
  if (now - refreshed_at_ < kSlotMapInterval || lanes_.closed()) {
    co_return;
  }
  refreshing_ = true;
  refreshed_at_ = now;
  // Any node that answers knows the map: the lanes' connections first, then a new one to each
  // node ever met (the seed's address first), for when every connection is down.
  std::optional<SlotMap> map;
  std::string why;
  for (std::size_t i = 0; i < lanes_.size() && !map; ++i) {
    for (const auto& connection : lanes_[i].connections) {
      if (connection && !connection->broken()) {
        const auto keep = connection;
        map = co_await read_slots(*keep, why);
        break;
      }
    }
  }
  std::vector<RedisNode*> nodes;
  if (!map) {
    nodes = nodes_.all();
  }
  for (std::size_t i = 0; i < nodes.size() && !map; ++i) {
    try {
      const auto connection = co_await RedisConnection::open(nodes[i]->endpoint, nodes[i]->url,
                                                             lanes_.connect_timeout());
      map = co_await read_slots(*connection, why);
      connection->close();
    } catch (const std::exception&) {
      // Down too: try the next one.
    }
  }
  if (map && map->uncovered().empty() && !lanes_.closed()) {
    co_await follow(*map, false);
  }
  refreshing_ = false;
  refreshed_->cancel();
}

}  // namespace sluice::store::redis
