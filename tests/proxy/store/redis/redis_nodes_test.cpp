// The store's nodes, in memory: the single Redis made at once, a cluster's masters made on first
// use from their addresses with the seed's credentials, and available() counting only the
// breakers of nodes some loop sends to, and each node's health for the admin page.
#include "proxy/store/redis/redis_nodes.hpp"

#include <gtest/gtest.h>

namespace sluice::store::redis {
namespace {

config::RedisOptions seed(bool cluster) {
  config::RedisOptions options;
  options.url = "redis://:secret@10.0.0.1:7000/0";
  options.endpoint = {.host = "10.0.0.1", .port = 7000, .user = "", .password = "secret", .db = 0};
  options.cluster = cluster;
  return options;
}

TEST(RedisNodes, ASingleRedisIsOneNodeNamedByItsUrl) {
  RedisNodes nodes(seed(false));
  ASSERT_EQ(nodes.all().size(), 1U);
  EXPECT_EQ(&nodes.single(), nodes.all()[0]);
  EXPECT_EQ(nodes.single().url, "redis://:secret@10.0.0.1:7000/0");
  EXPECT_EQ(nodes.single().endpoint.port, 7000);
}

TEST(RedisNodes, AClustersMastersAreMadeOnFirstUseWithTheSeedsPassword) {
  RedisNodes nodes(seed(true));
  EXPECT_TRUE(nodes.all().empty());
  RedisNode& master = nodes.at("10.0.0.2:7001");
  EXPECT_EQ(master.endpoint.host, "10.0.0.2");
  EXPECT_EQ(master.endpoint.port, 7001);
  EXPECT_EQ(master.endpoint.password, "secret");
  EXPECT_EQ(master.url, "redis://10.0.0.2:7001");  // for messages: no password
  EXPECT_EQ(&nodes.at("10.0.0.2:7001"), &master);
  nodes.at("10.0.0.3:7002");
  EXPECT_EQ(nodes.all().size(), 2U);
  EXPECT_EQ(nodes.all()[0], &master);  // in the order they were met
}

TEST(RedisNodes, AvailableUnlessTheBreakerOfANodeThatServesIsOpen) {
  RedisNodes nodes(seed(true));
  RedisNode& serving = nodes.at("10.0.0.2:7001");
  RedisNode& gone = nodes.at("10.0.0.3:7002");
  ++serving.serving;
  gone.breaker.failed(CircuitBreaker::Clock::now());  // a master no slot map names any more
  EXPECT_TRUE(nodes.available());
  serving.breaker.failed(CircuitBreaker::Clock::now());
  EXPECT_FALSE(nodes.available());
}

TEST(RedisNodes, ReportEachNodesAddressAndBreakerWithoutItsPassword) {
  RedisNodes single(seed(false));
  ++single.single().serving;
  ASSERT_EQ(single.health().size(), 1U);
  EXPECT_EQ(single.health()[0].address, "10.0.0.1:7000");
  EXPECT_FALSE(single.health()[0].breaker_open);
  EXPECT_TRUE(single.health()[0].serving);

  RedisNodes cluster(seed(true));
  ++cluster.at("10.0.0.2:7001").serving;
  cluster.at("10.0.0.3:7002").breaker.failed(CircuitBreaker::Clock::now());
  const std::vector<StoreHealth::Node> health = cluster.health();
  ASSERT_EQ(health.size(), 2U);
  EXPECT_EQ(health[0].address, "10.0.0.2:7001");
  EXPECT_TRUE(health[0].serving);
  EXPECT_FALSE(health[0].breaker_open);
  EXPECT_EQ(health[1].address, "10.0.0.3:7002");
  EXPECT_FALSE(health[1].serving);
  EXPECT_TRUE(health[1].breaker_open);
}

}  // namespace
}  // namespace sluice::store::redis
