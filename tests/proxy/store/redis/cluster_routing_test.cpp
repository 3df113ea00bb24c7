// Which lane serves a key: on a single Redis its one lane; on a real Redis Cluster started by the
// test (redis-server in cluster mode, joined by redis-cli), the master of the key's slot, as the
// loop's slot map says, followed when a replica takes over; and the start errors of a seed that
// is no cluster, or of a cluster whose slots are not all served.
#include "proxy/store/redis/cluster_routing.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <optional>
#include <string>

#include "limiter/key_hash.hpp"
#include "tests/proxy/store/redis/redis_test_helpers.hpp"
#include "tests/support/redis_cluster.hpp"
#include "tests/support/redis_server.hpp"
#include "tests/support/redis_store_fixture.hpp"

namespace sluice::store::redis {
namespace {

using namespace std::chrono_literals;
using test::cluster_store;
using test::decided_by_redis;
using test::kPerUserYaml;
using test::of_user;
using test::slot_of_user;
using test::StoreFixture;
using test::user;

/// Charges of `keys` (their shared hashes), in that order.
pipeline::Charges charges_of(std::initializer_list<limiter::KeyHash> keys) {
  pipeline::Charges charges;
  for (const limiter::KeyHash key : keys) {
    charges.shared_key[charges.count++] = key;
  }
  charges.live = charges.count;
  return charges;
}

TEST(ClusterRouting, ASingleRedisServesEveryKeyFromItsOneLane) {
  test::LoopParts redis("url: \"redis://127.0.0.1:1\"");  // never opened: no socket
  EXPECT_EQ(redis.loop.lanes.size(), 1U);
  EXPECT_EQ(redis.loop.lanes.serving(), 1U);
  EXPECT_EQ(redis.nodes.single().serving, 1);
  LaneIndices lanes{};
  lanes.fill(7);
  ASSERT_TRUE(redis.loop.routing.route(charges_of({1, 0xabcdef, ~0ULL}), lanes));
  EXPECT_EQ(lanes[0], 0U);
  EXPECT_EQ(lanes[1], 0U);
  EXPECT_EQ(lanes[2], 0U);
  EXPECT_EQ(redis.loop.routing.lane_of(std::string_view("{sluice:}lease-holders")), 0U);
}

TEST(ClusterRouting, SendsEachKeyToTheMasterOfItsSlot) {
  test::RedisCluster cluster(3);
  test::LoopParts redis(cluster_store(cluster));
  redis.open();
  EXPECT_EQ(redis.loop.lanes.serving(), 3U);
  std::size_t masters_met = 0;
  std::vector<bool> met(redis.loop.lanes.size(), false);
  for (std::size_t u = 0; u < 100; ++u) {
    const limiter::KeyHash key = limiter::hash_key(user(u), pipeline::kSharedKeySeed);
    const std::uint16_t lane = redis.loop.routing.lane_of(key);
    ASSERT_LT(lane, redis.loop.lanes.size()) << user(u);
    EXPECT_EQ(redis.loop.lanes[lane].node.endpoint.port, cluster.master_of(cluster_slot(key)))
        << user(u);
    masters_met += met[lane] ? 0U : 1U;
    met[lane] = true;
  }
  EXPECT_EQ(masters_met, 3U);
  // A request's charges each go to their own key's master.
  const limiter::KeyHash first = limiter::hash_key(user(0), pipeline::kSharedKeySeed);
  const limiter::KeyHash second = limiter::hash_key(user(1), pipeline::kSharedKeySeed);
  LaneIndices lanes{};
  ASSERT_TRUE(redis.loop.routing.route(charges_of({first, second}), lanes));
  EXPECT_EQ(lanes[0], redis.loop.routing.lane_of(first));
  EXPECT_EQ(lanes[1], redis.loop.routing.lane_of(second));
}

TEST(ClusterRouting, AReplicaPromotedAfterItsMasterDiedIsFollowedWithinASecond) {
  test::RedisCluster cluster(3, 1);
  StoreFixture fixture(kPerUserYaml, cluster_store(cluster, "timeout: 200ms, on_error: deny"));
  // A user on the master about to die (node 1: the seed stays up).
  const unsigned short killed = cluster.node(1).port();
  std::size_t on_killed = 0;
  while (cluster.master_of(slot_of_user(user(on_killed))) != killed) {
    ++on_killed;
  }
  const std::string& victim = user(on_killed);
  ASSERT_TRUE(decided_by_redis(fixture.redis(of_user(victim), std::nullopt)));
  cluster.node(1).kill();
  const auto killed_at = std::chrono::steady_clock::now();
  std::optional<std::chrono::steady_clock::time_point> promoted_at;
  std::optional<std::chrono::steady_clock::time_point> followed_at;
  while (!followed_at && std::chrono::steady_clock::now() - killed_at < 15s) {
    if (!promoted_at && cluster.master_of(slot_of_user(victim)) != killed &&
        cluster.master_of(slot_of_user(victim)) != 0) {
      promoted_at = std::chrono::steady_clock::now();
    }
    if (decided_by_redis(fixture.redis(of_user(victim), std::nullopt))) {
      followed_at = std::chrono::steady_clock::now();
    }
    fixture.loop().run_for(20ms);
  }
  ASSERT_TRUE(followed_at) << "still failing 15 s after the master died";
  ASSERT_TRUE(promoted_at);
  const auto after_promotion = *followed_at - *promoted_at;
  std::printf("master killed: replica promoted after %lld ms, followed %lld ms later\n",
              static_cast<long long>((*promoted_at - killed_at) / 1ms),
              static_cast<long long>(after_promotion / 1ms));
  EXPECT_LE(after_promotion, 1s);
  // Exact again on the new master: a new user gets exactly its limit.
  const std::string fresh = victim + "-after";
  for (int i = 0; i < 4; ++i) {
    const pipeline::Decision decision = fixture.redis(of_user(fresh), std::nullopt);
    EXPECT_EQ(name_of(decision.outcome),
              name_of(i < 3 ? pipeline::Outcome::allowed : pipeline::Outcome::limited));
  }
  EXPECT_TRUE(fixture.store().available());
}

/// The error a store's start gives, or "" if it started.
std::string start_error(const std::string& store) {
  try {
    StoreFixture fixture(kPerUserYaml, store);
  } catch (const StoreError& error) {
    return error.what();
  }
  return "";
}

TEST(ClusterRouting, ASeedNotInClusterModeOrAWrongPasswordIsAStartErrorNamingTheRedactedUrl) {
  const test::RedisServer plain;
  const std::string not_cluster = start_error("url: \"" + plain.url() + "\", cluster: true");
  EXPECT_NE(not_cluster.find("not in cluster mode"), std::string::npos) << not_cluster;
  EXPECT_NE(not_cluster.find(plain.url()), std::string::npos) << not_cluster;

  const test::RedisServer guarded("right-secret");
  const std::string url = "redis://:wrong-secret@127.0.0.1:" + std::to_string(guarded.port());
  const std::string wrong = start_error("url: \"" + url + "\", cluster: true");
  EXPECT_NE(wrong.find("127.0.0.1:" + std::to_string(guarded.port())), std::string::npos) << wrong;
  EXPECT_EQ(wrong.find("wrong-secret"), std::string::npos) << wrong;
}

TEST(ClusterRouting, SlotsServedByNoMasterAreAStartError) {
  test::RedisCluster cluster(3);
  const unsigned short master = cluster.master_of(100);
  for (std::size_t i = 0; i < cluster.size(); ++i) {
    if (cluster.node(i).port() == master) {
      cluster.cli(i, "CLUSTER DELSLOTS 100 101 102");
    }
  }
  const std::string error = start_error(cluster_store(cluster));
  EXPECT_NE(error.find("slots 100-102 are served by no master"), std::string::npos) << error;
}

}  // namespace
}  // namespace sluice::store::redis
