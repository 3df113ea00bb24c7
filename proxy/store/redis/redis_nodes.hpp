#pragma once

#include <atomic>
#include <chrono>
#include <deque>
#include <mutex>
#include <string>
#include <vector>

#include "config/proxy_config.hpp"
#include "proxy/store/redis/circuit_breaker.hpp"
#include "proxy/store/store.hpp"

namespace sluice::store::redis {

/// One Redis the store sends decisions to: the single Redis, or a master of a Redis Cluster.
/// Shared by the event loops, so that its breaker opens for all of them at once: on a cluster,
/// only the requests to a failing master skip it.
struct RedisNode {
  /// While the breaker is open, one request is let through as a probe this often.
  static constexpr std::chrono::milliseconds kProbeInterval{250};

  RedisNode(config::RedisEndpoint endpoint_, std::string address_, std::string url_)
      : endpoint(std::move(endpoint_)), address(std::move(address_)), url(std::move(url_)) {}

  config::RedisEndpoint endpoint;
  std::string address;  ///< "host:port"; empty for the single Redis.
  std::string url;      ///< For messages; redacted when shown.
  CircuitBreaker breaker{kProbeInterval};
  /// Loops whose slot map names it a master (always 1 or more on a single Redis): only their
  /// breakers count for available().
  std::atomic<int> serving{0};
};

/// The store's nodes: the single Redis, made at once, or the masters of a cluster, made as the
/// slot maps name them. A node's address is its identity; nodes are never removed. Any loop may
/// add one, hence the lock (never taken on a decision's path).
class RedisNodes {
 public:
  explicit RedisNodes(const config::RedisOptions& options);

  /// The single Redis (not on a cluster).
  RedisNode& single() noexcept { return nodes_.front(); }
  /// The master at `address` ("host:port"), made on first use with the seed's password and
  /// database.
  RedisNode& at(const std::string& address);
  /// Every node so far, in the order they were met (the seed's first on a cluster).
  std::vector<RedisNode*> all();
  /// False while a breaker of a node some loop sends to is open.
  bool available() const;
  /// Each node's address, breaker and whether a loop sends to it, for the admin page.
  std::vector<StoreHealth::Node> health() const;

 private:
  config::RedisEndpoint seed_;
  mutable std::mutex mutex_;
  /// A deque, so that the loops' references stay valid as nodes are added.
  std::deque<RedisNode> nodes_;
};

}  // namespace sluice::store::redis
