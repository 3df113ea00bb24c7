#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "tests/support/redis_server.hpp"

namespace sluice::test {

/// A real Redis Cluster on loopback for tests: `masters` redis-servers in cluster mode, each with
/// `replicas` replicas, joined by `redis-cli --cluster create`, and ready (cluster_state:ok on
/// every node) when the constructor returns. Nodes are RedisServers: kill() one as a crashed
/// master would die.
class RedisCluster {
 public:
  static constexpr int kNodeTimeoutMs = 1000;  ///< cluster-node-timeout: failover detection.

  explicit RedisCluster(std::size_t masters, std::size_t replicas = 0);
  RedisCluster(const RedisCluster&) = delete;
  RedisCluster& operator=(const RedisCluster&) = delete;
  RedisCluster(RedisCluster&&) = delete;
  RedisCluster& operator=(RedisCluster&&) = delete;
  ~RedisCluster();

  /// The seed node's URL (the first master).
  std::string url() const { return nodes_.front()->url(); }
  std::size_t size() const noexcept { return nodes_.size(); }
  RedisServer& node(std::size_t i) { return *nodes_[i]; }

  /// redis-cli's output for `command` (words separated by spaces) on node `i`.
  std::string cli(std::size_t i, const std::string& command) const;
  /// The port of the master that serves `slot` now, as node `asked` sees it; 0 when none does
  /// (its master is marked failed).
  unsigned short master_of(unsigned slot, std::size_t asked = 0) const;
  /// Keys held by node `i`.
  std::size_t keys_on(std::size_t i) const;
  /// Waits until every node still running says cluster_state:ok, and every replica is in sync
  /// (at most `seconds`).
  void wait_until_ok(int seconds = 20) const;

 private:
  void build(std::size_t masters, std::size_t replicas);

  std::string directory_;
  std::vector<std::unique_ptr<RedisServer>> nodes_;
};

}  // namespace sluice::test
