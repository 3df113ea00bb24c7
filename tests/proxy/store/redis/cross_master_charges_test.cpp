// A request whose limiters live on several masters of a real Redis Cluster started by the test:
// charged on each, and taken back where it was admitted if another master refused it, so that
// it is decided all or nothing, as the memory limiters decide it.
#include "proxy/store/redis/cross_master_charges.hpp"

#include <gtest/gtest.h>

#include <array>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "tests/proxy/store/redis/redis_test_helpers.hpp"
#include "tests/support/redis_cluster.hpp"
#include "tests/support/redis_store_fixture.hpp"

namespace sluice::store::redis {
namespace {

using namespace std::chrono_literals;
using limiter::Duration;
using limiter::TimePoint;
using test::Algorithm;
using test::at;
using test::cluster_store;
using test::of_user;
using test::Request;
using test::slot_of_user;
using test::StoreFixture;
using test::user;

/// Users whose per-user keys live on other masters than `name`'s: teams, for a per-team limiter.
std::vector<std::string> teams_away_from(const test::RedisCluster& cluster, const std::string& name,
                                         std::size_t count) {
  std::vector<std::string> teams;
  for (std::size_t t = 100; teams.size() < count; ++t) {
    if (cluster.master_of(slot_of_user(user(t))) != cluster.master_of(slot_of_user(name))) {
      teams.push_back(user(t));
    }
  }
  return teams;
}

TEST(ClusterRefunds, ARequestRefusedOnOneMasterIsTakenBackOnTheOther) {
  test::RedisCluster cluster(3);
  const std::string& name = user(0);
  const std::vector<std::string> teams = teams_away_from(cluster, name, 2);
  StoreFixture fixture(
      "upstream: http://127.0.0.1:9000\nlimiters:\n"
      "  per-user: {algorithm: fixed_window, limit: 5, window: 1h, key: \"header:X-User\"}\n"
      "  per-team: {algorithm: fixed_window, limit: 1, window: 1h, key: \"header:X-Team\"}\n"
      "routes:\n  - {name: api, limiters: [per-user, per-team]}\n",
      cluster_store(cluster));
  const auto send = [&](const std::string& team) {
    return fixture.redis(Request{.headers = {{"X-User", name}, {"X-Team", team}}}, std::nullopt);
  };
  const pipeline::Decision first = send(teams[0]);
  ASSERT_EQ(name_of(first.outcome), name_of(pipeline::Outcome::allowed));
  EXPECT_EQ(first.applied()[0].status.remaining, 4U);
  EXPECT_EQ(fixture.store().refunds(), 0U);  // admitted everywhere: nothing to take back
  // The team's master refuses the second; the user's master admitted it, and takes it back.
  EXPECT_EQ(name_of(send(teams[0]).outcome), name_of(pipeline::Outcome::limited));
  EXPECT_EQ(fixture.store().refunds(), 1U);
  const pipeline::Decision third = send(teams[1]);
  ASSERT_EQ(name_of(third.outcome), name_of(pipeline::Outcome::allowed));
  EXPECT_EQ(third.applied()[0].status.remaining, 3U);  // not 2: the refused one is not counted
  EXPECT_EQ(fixture.store().errors(), 0U);
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
  const std::vector<std::string> teams = teams_away_from(cluster, name, 2);
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

}  // namespace
}  // namespace sluice::store::redis
