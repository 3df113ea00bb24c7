#include "proxy/store/redis/redis_nodes.hpp"

#include <algorithm>

namespace sluice::store::redis {

RedisNodes::RedisNodes(const config::RedisOptions& options) : seed_(options.endpoint) {
  if (!options.cluster) {
    nodes_.emplace_back(options.endpoint, "", options.url);
  }
}

RedisNode& RedisNodes::at(const std::string& address) {
  const std::scoped_lock lock(mutex_);
  for (RedisNode& node : nodes_) {
    if (node.address == address) {
      return node;
    }
  }
  config::RedisEndpoint endpoint = seed_;
  const std::size_t colon = address.rfind(':');
  endpoint.host = address.substr(0, colon);
  endpoint.port = static_cast<std::uint16_t>(std::stoul(address.substr(colon + 1)));
  // A master's name in messages; its password is the seed's.
  return nodes_.emplace_back(std::move(endpoint), address, "redis://" + address);
}

std::vector<RedisNode*> RedisNodes::all() {
  const std::scoped_lock lock(mutex_);
  std::vector<RedisNode*> nodes;
  for (RedisNode& node : nodes_) {
    nodes.push_back(&node);
  }
  return nodes;
}

bool RedisNodes::available() const {
  const std::scoped_lock lock(mutex_);
  return std::none_of(nodes_.begin(), nodes_.end(), [](const RedisNode& node) {
    return node.serving > 0 && node.breaker.is_open();
  });
}

std::vector<StoreHealth::Node> RedisNodes::health() const {
  const std::scoped_lock lock(mutex_);
  std::vector<StoreHealth::Node> health;
  for (const RedisNode& node : nodes_) {
    health.push_back({.address = node.address.empty()
                                     ? node.endpoint.host + ":" + std::to_string(node.endpoint.port)
                                     : node.address,
                      .breaker_open = node.breaker.is_open(),
                      .serving = node.serving > 0});
  }
  return health;
}

}  // namespace sluice::store::redis
