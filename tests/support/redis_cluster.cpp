#include "tests/support/redis_cluster.hpp"

#include <unistd.h>

#include <array>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <sstream>
#include <stdexcept>
#include <thread>

#include "tests/support/shell.hpp"

namespace sluice::test {

RedisCluster::RedisCluster(std::size_t masters, std::size_t replicas) {
  // A machine busy with other tests may keep a cluster from forming (a port taken between its
  // pick and its use): the whole cluster is built again, once.
  for (int attempt = 1;; ++attempt) {
    try {
      build(masters, replicas);
      return;
    } catch (const std::runtime_error&) {
      if (attempt == 2) {
        throw;
      }
      nodes_.clear();
    }
  }
}

RedisCluster::~RedisCluster() {
  nodes_.clear();  // the servers first, then their files
  std::error_code ignored;
  std::filesystem::remove_all(directory_, ignored);
}

void RedisCluster::build(std::size_t masters, std::size_t replicas) {
  if (directory_.empty()) {
    directory_ =
        (std::filesystem::temp_directory_path() / ("sluice-cluster-" + std::to_string(::getpid()) +
                                                   "-" + std::to_string(free_loopback_port())))
            .string();
  }
  std::filesystem::create_directories(directory_);
  std::string addresses;
  for (std::size_t i = 0; i < masters * (1 + replicas); ++i) {
    // The cluster bus gets a port of its own: port + 10000 may be past 65535.
    const unsigned short bus = free_loopback_port();
    nodes_.push_back(std::make_unique<RedisServer>(
        "", std::vector<std::string>{
                "--cluster-enabled", "yes", "--cluster-port", std::to_string(bus),
                "--cluster-config-file",
                directory_ + "/nodes-" + std::to_string(i) + "-" + std::to_string(bus) + ".conf",
                "--cluster-node-timeout", std::to_string(kNodeTimeoutMs),
                // Replicas in sync at once (not after the 5 s diskless delay), and allowed to take
                // over however long their master has been gone.
                "--repl-diskless-sync-delay", "0", "--cluster-replica-validity-factor", "0",
                // The masters left serve their slots while one is down with no replica.
                "--cluster-require-full-coverage", "no"}));
    addresses += " 127.0.0.1:" + std::to_string(nodes_.back()->port());
  }
  const std::string created =
      output_of("redis-cli --cluster create" + addresses + " --cluster-replicas " +
                std::to_string(replicas) + " --cluster-yes 2>&1");
  if (created.find("All 16384 slots covered") == std::string::npos) {
    throw std::runtime_error("redis-cli --cluster create failed: " + created);
  }
  wait_until_ok();
}

std::string RedisCluster::cli(std::size_t i, const std::string& command) const {
  return output_of("redis-cli -p " + std::to_string(nodes_[i]->port()) + " " + command +
                   " 2>/dev/null");
}

void RedisCluster::wait_until_ok(int seconds) const {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(seconds);
  for (std::size_t i = 0; i < nodes_.size(); ++i) {
    const auto ready = [&] {
      const std::string replication = cli(i, "INFO replication");
      return cli(i, "CLUSTER INFO").find("cluster_state:ok") != std::string::npos &&
             (replication.find("role:slave") == std::string::npos ||
              replication.find("master_link_status:up") != std::string::npos);
    };
    while (!ready() && cli(i, "PING").find("PONG") != std::string::npos) {
      if (std::chrono::steady_clock::now() > deadline) {
        throw std::runtime_error("the Redis Cluster did not become ready: node " +
                                 std::to_string(i) + " says " +
                                 cli(i, "CLUSTER INFO").substr(0, 40));
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
  }
}

unsigned short RedisCluster::master_of(unsigned slot, std::size_t asked) const {
  // CLUSTER NODES: id, host:port@bus, flags, master, ping, pong, epoch, link, then slot ranges.
  const std::string nodes = cli(asked, "CLUSTER NODES");
  std::istringstream rows(nodes);
  std::string row;
  while (std::getline(rows, row)) {
    std::istringstream fields(row);
    std::string id, address, flags, master, ping, pong, epoch, link;
    fields >> id >> address >> flags >> master >> ping >> pong >> epoch >> link;
    if (flags.find("master") == std::string::npos || flags.find("fail") != std::string::npos) {
      continue;
    }
    std::string range;
    while (fields >> range) {
      if (range.starts_with('[')) {
        continue;  // a slot being migrated
      }
      const std::size_t dash = range.find('-');
      const auto first = static_cast<unsigned>(std::stoul(range.substr(0, dash)));
      const auto last = dash == std::string::npos
                            ? first
                            : static_cast<unsigned>(std::stoul(range.substr(dash + 1)));
      if (slot >= first && slot <= last) {
        const std::size_t colon = address.find(':');
        return static_cast<unsigned short>(
            std::stoul(address.substr(colon + 1, address.find('@') - colon - 1)));
      }
    }
  }
  return 0;
}

std::size_t RedisCluster::keys_on(std::size_t i) const {
  return std::stoul("0" + cli(i, "DBSIZE"));
}

}  // namespace sluice::test
