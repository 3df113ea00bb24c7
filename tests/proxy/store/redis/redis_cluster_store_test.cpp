// The Redis store on a real Redis Cluster started by the test (redis-server in cluster mode,
// joined by redis-cli): keys tagged so that Redis agrees on their slot, two replicas sharing each
// key's limit exactly with keys spread over every master, and a dead master failing only the
// requests whose keys it served. How keys find their master is in cluster_routing_test.cpp;
// requests whose limiters live on several masters in cross_master_charges_test.cpp.
#include <gtest/gtest.h>

#include <array>
#include <atomic>
#include <latch>
#include <map>
#include <memory>
#include <string>
#include <thread>

#include "limiter/key_hash.hpp"
#include "proxy/store/redis/cluster_slots.hpp"
#include "proxy/store/redis/redis_decision.hpp"
#include "proxy/store/redis/redis_store.hpp"
#include "tests/proxy/store/redis/redis_test_helpers.hpp"
#include "tests/support/redis_cluster.hpp"
#include "tests/support/redis_store_fixture.hpp"

namespace sluice::store::redis {
namespace {

namespace net = boost::asio;
using namespace std::chrono_literals;
using limiter::TimePoint;
using test::Algorithm;
using test::cluster_store;
using test::kPerUserYaml;
using test::of_user;
using test::Request;
using test::slot_of_user;
using test::StoreFixture;
using test::user;

TEST(RedisCluster, KeysAreTaggedWithTheLimiterKeySoRedisAgreesOnTheirSlot) {
  test::RedisCluster cluster(3);
  limiter::LimiterOptions options;
  options.algorithm = limiter::AlgorithmKind::fixed_window;
  for (const limiter::KeyHash key : {0x0ULL, 0xabULL, 0x0123456789abcdefULL, ~0ULL}) {
    std::string name;
    append_redis_key(name, {.prefix = "sluice:", .cluster = true}, "per-user", options, key);
    EXPECT_TRUE(name.starts_with("sluice:per-user:")) << name;
    EXPECT_EQ(std::stoul(cluster.cli(0, "CLUSTER KEYSLOT " + name)), cluster_slot(key)) << name;
  }
}

class ClusterSharedLimit : public ::testing::TestWithParam<Algorithm> {};

/// Two replicas (a store each, on its own thread and loop) send 8 requests for each of 60 users,
/// many in flight at once: each user gets exactly its limit of 5 in total.
TEST_P(ClusterSharedLimit, TwoReplicasAdmitExactlyEachUsersLimitTogether) {
  test::RedisCluster cluster(3);
  const std::string yaml =
      "upstream: http://127.0.0.1:9000\nlimiters:\n  per-user: {" + GetParam().limiter +
      ", key: \"header:X-User\"}\nroutes: [{name: api, limiters: [per-user]}]\n";
  constexpr std::size_t kUsers = 60;
  constexpr std::size_t kPerUser = 4;  // per replica
  constexpr std::size_t kPerWave = 20;
  std::array<std::atomic<int>, kUsers> admitted{};
  std::latch connected(2);
  std::vector<std::thread> replicas;
  for (std::size_t r = 0; r < 2; ++r) {
    replicas.emplace_back([&] {
      StoreFixture replica(yaml, cluster_store(cluster, "timeout: 1s"));
      connected.arrive_and_wait();
      const std::size_t total = kUsers * kPerUser;
      std::vector<pipeline::Decision> decisions(total);
      std::vector<pipeline::Charges> charges(total);
      std::vector<Request> requests;
      for (std::size_t i = 0; i < total; ++i) {
        requests.push_back(of_user(user(i % kUsers)));
      }
      std::size_t done = 0;
      pipeline::Pipeline& pipeline = replica.shared_pipeline();
      for (std::size_t i = 0; i < total; ++i) {
        const TimePoint now = limiter::SystemClock().now();
        ASSERT_TRUE(pipeline.prepare(test::PipelineFixture::view_of(requests[i]), now, std::nullopt,
                                     decisions[i], charges[i]));
        net::co_spawn(
            replica.loop().io(),
            test::decide_through(replica.store(), 0, pipeline, decisions[i], charges[i], now),
            [&](std::exception_ptr) { ++done; });
        if ((i + 1) % kPerWave == 0 || i + 1 == total) {
          while (done <= i) {
            replica.loop().run_for(1ms);
          }
        }
      }
      for (std::size_t i = 0; i < total; ++i) {
        admitted[i % kUsers] += decisions[i].outcome == pipeline::Outcome::allowed ? 1 : 0;
      }
      EXPECT_EQ(replica.store().errors(), 0U);
    });
  }
  for (std::thread& replica : replicas) {
    replica.join();
  }
  for (std::size_t u = 0; u < kUsers; ++u) {
    EXPECT_EQ(admitted[u], 5) << user(u);
  }
  for (std::size_t node = 0; node < cluster.size(); ++node) {
    EXPECT_GT(cluster.keys_on(node), 0U) << "master " << node << " holds no key";
  }
}

INSTANTIATE_TEST_SUITE_P(
    Algorithms, ClusterSharedLimit,
    ::testing::Values(Algorithm{"fixed_window", "algorithm: fixed_window, limit: 5, window: 1d"},
                      Algorithm{"sliding_log", "algorithm: sliding_log, limit: 5, window: 1h"},
                      Algorithm{"token_bucket", "algorithm: token_bucket, rate: 1/h, burst: 5"}),
    [](const auto& test) { return test.param.name; });

TEST(RedisCluster, AMasterKilledFailsOnlyTheUsersOnItsSlotsTheOthersStayExact) {
  test::RedisCluster cluster(3);
  StoreFixture fixture(kPerUserYaml, cluster_store(cluster, "timeout: 200ms, on_error: deny"));
  std::map<std::string, unsigned short> master_of_user;
  for (std::size_t u = 0; u < 40; ++u) {
    master_of_user[user(u)] = cluster.master_of(slot_of_user(user(u)));
  }
  const unsigned short killed = cluster.node(2).port();
  cluster.node(2).kill();
  // Until the others mark it failed (node timeout), and after: with
  // cluster-require-full-coverage no, they go on serving their own slots.
  const std::string some_user_on_killed = [&] {
    for (const auto& [name, master] : master_of_user) {
      if (master == killed) {
        return name;
      }
    }
    return std::string();
  }();
  ASSERT_FALSE(some_user_on_killed.empty());
  const auto deadline = std::chrono::steady_clock::now() + 10s;
  while (cluster.master_of(slot_of_user(some_user_on_killed)) != 0) {  // not failed yet
    ASSERT_LT(std::chrono::steady_clock::now(), deadline);
    fixture.loop().run_for(20ms);
  }
  std::size_t on_killed = 0;
  for (const auto& [name, master] : master_of_user) {
    SCOPED_TRACE(name);
    if (master == killed) {
      ++on_killed;
      const auto started = std::chrono::steady_clock::now();
      const pipeline::Decision decision = fixture.redis(of_user(name), std::nullopt);
      EXPECT_EQ(decision.status, 503U);
      EXPECT_LE(std::chrono::steady_clock::now() - started, 200ms + 100ms);  // the timeout
      continue;
    }
    for (int i = 0; i < 4; ++i) {  // exactly the limit of 3
      const pipeline::Decision decision = fixture.redis(of_user(name), std::nullopt);
      EXPECT_EQ(name_of(decision.outcome),
                name_of(i < 3 ? pipeline::Outcome::allowed : pipeline::Outcome::limited));
    }
  }
  EXPECT_GT(on_killed, 0U);
  EXPECT_LT(on_killed, master_of_user.size());
  EXPECT_FALSE(fixture.store().available());  // so /readyz says so
  EXPECT_GT(fixture.store().errors(), 0U);
}

/// Token budgets per user and per team, charged after the response (SPEC §9): a user's and its
/// team's keys live on different masters, so each request is admitted on both and settled on
/// both. Two replicas see every charge of the other exactly.
TEST(RedisCluster, ReplicasShareTokenBudgetsSettledOnEveryMaster) {
  test::RedisCluster cluster(3);
  const std::string yaml = R"(
upstream: http://127.0.0.1:9000
limiters:
  user-tokens: {algorithm: fixed_window, limit: 1000, window: 1d, key: "header:X-User", cost: response}
  team-tokens: {algorithm: token_bucket, rate: 100000/d, burst: 100000, key: "header:X-Team", cost: response}
routes: [{name: api, limiters: [user-tokens, team-tokens], cost_from: {header: X-Cost}}]
)";
  std::array<std::unique_ptr<StoreFixture>, 2> replicas{
      std::make_unique<StoreFixture>(yaml, cluster_store(cluster)),
      std::make_unique<StoreFixture>(yaml, cluster_store(cluster))};
  const TimePoint now = test::at(10s);
  const std::string team = "team-a";
  std::uint64_t team_charged = 0;
  std::size_t across_masters = 0;
  for (std::size_t u = 0; u < 30; ++u) {
    SCOPED_TRACE(user(u));
    const Request request{.headers = {{"X-User", user(u)}, {"X-Team", team}}};
    const auto cost = static_cast<limiter::Permits>(100 + u);
    // One settlement per master the request's keys live on.
    const bool two_masters =
        cluster.master_of(slot_of_user(user(u))) != cluster.master_of(slot_of_user(team));
    const std::uint64_t settlements = two_masters ? 2U : 1U;
    const pipeline::Decision first = replicas[0]->redis(request, now);
    ASSERT_EQ(first.outcome, pipeline::Outcome::allowed);
    ASSERT_EQ(first.applied().size(), 2U);
    EXPECT_EQ(first.applied()[1].status.remaining, 100000 - team_charged);
    replicas[0]->settle_in_redis(first, {.status = 200, .cost = cost}, now, settlements);
    team_charged += cost;
    const pipeline::Decision second = replicas[1]->redis(request, now);
    ASSERT_EQ(second.outcome, pipeline::Outcome::allowed);
    EXPECT_EQ(second.applied()[0].status.remaining, 1000 - cost);
    EXPECT_EQ(second.applied()[1].status.remaining, 100000 - team_charged);
    replicas[1]->settle_in_redis(second, {.status = 200, .cost = 1000}, now,
                                 settlements);  // into debt
    team_charged += 1000;
    EXPECT_EQ(replicas[0]->redis(request, now).outcome, pipeline::Outcome::limited);
    across_masters += two_masters ? 1U : 0U;
  }
  EXPECT_GT(across_masters, 5U);  // each master owns a third of the slots
  EXPECT_EQ(replicas[0]->store().lost_settlements() + replicas[1]->store().lost_settlements(), 0U);
  EXPECT_EQ(replicas[0]->store().settlements() + replicas[1]->store().settlements(),
            60U + across_masters * 2);
}

}  // namespace
}  // namespace sluice::store::redis
