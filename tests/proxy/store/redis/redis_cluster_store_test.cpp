// The Redis store on a real Redis Cluster started by the test (redis-server in cluster mode,
// joined by redis-cli): keys spread over every master, requests whose limiters live on several
// masters decided all or nothing (as the memory limiters decide them), a dead master failing only
// the requests whose keys it served, a promoted replica followed, and clear start errors.
#include <gtest/gtest.h>

#include <array>
#include <atomic>
#include <latch>
#include <map>
#include <random>
#include <thread>

#include "limiter/key_hash.hpp"
#include "proxy/store/redis/cluster_slots.hpp"
#include "proxy/store/redis/redis_decision.hpp"
#include "proxy/store/redis/redis_store.hpp"
#include "tests/support/redis_cluster.hpp"
#include "tests/support/redis_store_fixture.hpp"

namespace sluice::store::redis {
namespace {

namespace net = boost::asio;
using namespace std::chrono_literals;
using limiter::Duration;
using limiter::TimePoint;
using test::Algorithm;
using test::at;
using test::Request;
using test::StoreFixture;

/// "user-N": the names outlive the requests, whose headers only view them.
const std::string& user(std::size_t n) {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> all;
    for (std::size_t i = 0; i < 200; ++i) {
      all.push_back("user-" + std::to_string(i));
    }
    return all;
  }();
  return names.at(n);
}

/// A request of user `name` (its X-User header), which must outlive it.
Request of_user(const std::string& name) { return Request{.headers = {{"X-User", name}}}; }

/// The slot of a user's per-user key: the store's routing, computed apart.
unsigned slot_of_user(const std::string& user) {
  return cluster_slot(limiter::hash_key(user, pipeline::kSharedKeySeed));
}

std::string cluster_store(const test::RedisCluster& cluster, const std::string& more = "") {
  return "url: \"" + cluster.url() + "\", cluster: true" + (more.empty() ? "" : ", " + more);
}

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

/// A route with a per-user limiter (the algorithm tested) and a per-route one, whose keys lie in
/// different slots, mostly on different masters.
std::string across_masters(const Algorithm& per_user, std::string_view mode) {
  return "upstream: http://127.0.0.1:9000\nlimiters:\n  per-user: {" + per_user.limiter +
         ", key: \"header:X-User\", mode: " + std::string(mode) +
         ", max_delay: 400ms}\n"
         "  per-route: {algorithm: fixed_window, limit: 8, window: 1s, key: route}\n"
         "routes:\n  - {name: api, limiters: [per-user, per-route]}\n";
}

class ClusterDecisions : public ::testing::TestWithParam<std::tuple<Algorithm, std::string>> {};

/// Seeded traffic from 6 users on a cluster of 3 masters, against the memory limiters: a request
/// the per-route limiter refuses after its user's master admitted it is refunded there, so the
/// decisions stay the memory store's, request after request.
TEST_P(ClusterDecisions, AsTheMemoryStoreWhenARequestsLimitersLiveOnSeveralMasters) {
  const auto& [algorithm, mode] = GetParam();
  test::RedisCluster cluster(3);
  StoreFixture fixture(across_masters(algorithm, mode), cluster_store(cluster));
  EXPECT_EQ(fixture.store().masters(0), 3U);
  const std::array<Duration, 7> steps{0us, 1us, 10ms, 37ms, 100ms, 250ms, 1s};
  std::mt19937 random(2028);
  test::HeldPermits held;
  TimePoint now = at(0s);
  int limited = 0;
  for (int i = 0; i < 300; ++i) {
    now += steps[random() % steps.size()];
    const auto cost = static_cast<limiter::Permits>(1 + random() % 2);
    const Request request = of_user(user(random() % 6));
    const pipeline::Decision memory = fixture.memory(request, now, cost);
    const std::uint64_t cached_before = fixture.store().cached_refusals();
    const std::uint64_t refunds_before = fixture.store().refunds();
    const pipeline::Decision redis = fixture.redis(request, now, cost);
    const bool cached = fixture.store().cached_refusals() != cached_before;
    const bool refunded = fixture.store().refunds() != refunds_before;
    test::expect_same(redis, memory,
                      "request " + std::to_string(i) + (refunded ? ", refunded" : ""), cached);
    limited += memory.outcome != pipeline::Outcome::allowed ? 1 : 0;
    held.keep(memory, redis);
    if (!held.empty() && random() % 3 == 0) {
      held.release_oldest(fixture);
    }
  }
  EXPECT_GT(limited, 20);
  EXPECT_GT(fixture.store().refunds(), 0U);  // the case this test is about happened
  EXPECT_EQ(fixture.store().errors(), 0U);
}

const Algorithm kFixedWindow{"fixed_window", "algorithm: fixed_window, limit: 5, window: 1s"};
const Algorithm kSlidingWindow{"sliding_window", "algorithm: sliding_window, limit: 6, window: 1s"};
const Algorithm kWheel{"wheel", "algorithm: wheel, limit: 6, window: 1s, slots: 4"};

/// Every algorithm whose refund is exact: all of them in reject mode; in delay mode, those whose
/// commit into a later period keeps what the current one held (see WindowsInDelayMode below).
std::vector<std::tuple<Algorithm, std::string>> refundable_algorithms() {
  const Algorithm sliding_log{"sliding_log", "algorithm: sliding_log, limit: 5, window: 1s"};
  const Algorithm token_bucket{"token_bucket", "algorithm: token_bucket, rate: 10/s, burst: 4"};
  const Algorithm leaky_bucket{"leaky_bucket", "algorithm: leaky_bucket, rate: 10/s, burst: 3"};
  std::vector<std::tuple<Algorithm, std::string>> cases;
  for (const Algorithm& algorithm :
       {kFixedWindow, sliding_log, kSlidingWindow, kWheel, token_bucket, leaky_bucket,
        Algorithm{"concurrency", "algorithm: concurrency, limit: 3"}}) {
    cases.emplace_back(algorithm, "reject");
  }
  for (const Algorithm& algorithm : {sliding_log, token_bucket, leaky_bucket}) {
    cases.emplace_back(algorithm, "delay");
  }
  return cases;
}

INSTANTIATE_TEST_SUITE_P(Algorithms, ClusterDecisions, ::testing::ValuesIn(refundable_algorithms()),
                         [](const auto& test) {
                           return std::get<0>(test.param).name + "_" + std::get<1>(test.param);
                         });

class WindowsInDelayMode : public ::testing::TestWithParam<Algorithm> {};

/// In delay mode, a window algorithm's commit into a later window replaces (fixed_window,
/// sliding_window) or drops (wheel) counts the current window held; a refund cannot bring them
/// back, so it keeps the later window's reservations rather than let the current window admit
/// again. Such a request costs its permits in that window though it was refused: the store admits
/// less than the memory limiters then, never more. (The memory limiters, which decide all or
/// nothing at once, would not count it.)
TEST_P(WindowsInDelayMode, ARefundNeverLetsTheCurrentWindowAdmitAgain) {
  test::RedisCluster cluster(3);
  // A user, and teams whose keys live on other masters than the user's.
  const std::string& name = user(0);
  std::vector<std::string> teams;
  for (std::size_t t = 100; teams.size() < 2; ++t) {
    if (cluster.master_of(slot_of_user(user(t))) != cluster.master_of(slot_of_user(name))) {
      teams.push_back(user(t));
    }
  }
  StoreFixture fixture(
      "upstream: http://127.0.0.1:9000\nlimiters:\n  per-user: {" + GetParam().limiter +
          ", key: \"header:X-User\", mode: delay, max_delay: 2s}\n"
          "  per-team: {algorithm: fixed_window, limit: 5, window: 1h, key: \"header:X-Team\"}\n"
          "routes:\n  - {name: api, limiters: [per-user, per-team]}\n",
      cluster_store(cluster));
  const auto send = [&](const std::string& team, TimePoint now) {
    return fixture.redis(Request{.headers = {{"X-User", name}, {"X-Team", team}}}, now);
  };
  // The user's window (of 5) fills up, with the first team's 5 permits.
  for (int i = 0; i < 5; ++i) {
    ASSERT_EQ(name_of(send(teams[0], at(500ms)).outcome), name_of(pipeline::Outcome::allowed));
  }
  // The user's limiter would delay the next request to its next window, but the team refuses
  // it: its reservation there is taken back (or kept), on the user's master.
  EXPECT_EQ(name_of(send(teams[0], at(600ms)).outcome), name_of(pipeline::Outcome::limited));
  EXPECT_EQ(fixture.store().refunds(), 1U);
  // The current window is still full: another team's request waits for the next one.
  const pipeline::Decision next = send(teams[1], at(700ms));
  EXPECT_EQ(name_of(next.outcome), name_of(pipeline::Outcome::delayed));
  EXPECT_GT(next.hold, 0ms);
}

INSTANTIATE_TEST_SUITE_P(
    Algorithms, WindowsInDelayMode,
    ::testing::Values(kFixedWindow,
                      Algorithm{"sliding_window",
                                "algorithm: sliding_window, limit: 5, window: 1s"},
                      Algorithm{"wheel", "algorithm: wheel, limit: 5, window: 1s, slots: 4"}),
    [](const auto& test) { return test.param.name; });

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

const std::string kPerUserYaml =
    "upstream: http://127.0.0.1:9000\nlimiters:\n"
    "  per-user: {algorithm: fixed_window, limit: 3, window: 1d, key: \"header:X-User\"}\n"
    "routes: [{name: api, limiters: [per-user]}]\n";

/// Whether a decision is Redis's (allowed or limited), not on_error's (deny: 503).
bool decided_by_redis(const pipeline::Decision& decision) {
  return decision.outcome == pipeline::Outcome::allowed ||
         decision.outcome == pipeline::Outcome::limited;
}

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

TEST(RedisCluster, AReplicaPromotedAfterItsMasterDiedIsFollowedWithinASecond) {
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

TEST(RedisCluster, ASeedNotInClusterModeOrAWrongPasswordIsAStartErrorNamingTheRedactedUrl) {
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

TEST(RedisCluster, SlotsServedByNoMasterAreAStartError) {
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
