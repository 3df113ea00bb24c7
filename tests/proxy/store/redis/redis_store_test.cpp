// The Redis store as the proxy uses it (the Store seam), against a real redis-server started by
// the test: it decides as the memory limiters do (the same traffic, on a simulated clock, through
// both), it is all or nothing across a request's limiters, it refuses keys it knows are over their
// limit without a round trip, it follows on_error when Redis hangs or dies and finds it again,
// and replicas share a limit exactly. Each part's own behaviour is tested beside it
// (redis_lanes_test.cpp, redis_batching_test.cpp, redis_leases_test.cpp, ...).
#include "proxy/store/redis/redis_store.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <boost/asio/detached.hpp>
#include <deque>
#include <latch>
#include <random>
#include <string>
#include <thread>

#include "config/time_zones.hpp"
#include "limiter/calendar.hpp"
#include "tests/proxy/store/redis/redis_test_helpers.hpp"
#include "tests/support/event_loop.hpp"
#include "tests/support/manual_clock.hpp"
#include "tests/support/pipeline_fixture.hpp"
#include "tests/support/redis_server.hpp"
#include "tests/support/redis_store_fixture.hpp"
#include "tests/support/shell.hpp"
#include "tests/support/store_decision.hpp"

namespace sluice::store::redis {
namespace {

namespace net = boost::asio;
using namespace std::chrono_literals;
using Request = test::PipelineFixture::Request;
using limiter::Duration;
using limiter::TimePoint;
using test::Algorithm;
using test::at;
using test::config_for;
using test::Costed;
using test::expect_same;
using test::kSlack;
using test::kTimeout;
using test::kTwoPerHour;
using test::redis_with;
using test::StoreFixture;
using test::time_to_recover;
using test::timed;
using test::timing_out_after_100ms;
using test::together;

class SameDecisions
    : public ::testing::TestWithParam<std::tuple<Algorithm, std::string, std::string>> {};

/// Seeded traffic with steps on and around window and bucket edges, costs of 1 and 2, and
/// (for concurrency) permits given back in arrival order.
TEST_P(SameDecisions, AsTheMemoryStoreOnTheSameTraffic) {
  const auto& [algorithm, mode, code] = GetParam();
  const auto server = redis_with(code);
  StoreFixture fixture(config_for(algorithm, mode), "url: \"" + server->url() + "\"");
  EXPECT_EQ(fixture.store().uses_functions(), code == "functions");
  const std::array<Duration, 9> steps{0us, 0us, 1us, 37ms, 100ms, 250ms, 499'999us, 1s, 3s};
  std::mt19937 random(2026);
  test::HeldPermits held;
  TimePoint now = at(0s);
  int limited = 0;  // or delayed
  int cached_answers = 0;
  for (int i = 0; i < 400; ++i) {
    now += steps[random() % steps.size()];
    const auto cost = static_cast<limiter::Permits>(1 + random() % 2);
    const Request request{.peer = i % 5 == 0 ? "198.51.100.9" : "198.51.100.7"};
    const pipeline::Decision memory = fixture.memory(request, now, cost);
    const std::uint64_t cached_before = fixture.store().cached_refusals();
    const pipeline::Decision redis = fixture.redis(request, now, cost);
    const bool cached = fixture.store().cached_refusals() != cached_before;
    cached_answers += cached ? 1 : 0;
    expect_same(redis, memory, "request " + std::to_string(i), cached);
    limited += memory.outcome != pipeline::Outcome::allowed ? 1 : 0;
    held.keep(memory, redis);
    if (!held.empty() && random() % 3 == 0) {
      held.release_oldest(fixture);
    }
  }
  // The traffic must exercise every answer, or the comparison proves little.
  EXPECT_GT(limited, 20);  // limited or delayed
  EXPECT_LT(limited, 380);
  if (std::get<0>(GetParam()).name != "concurrency") {
    EXPECT_GT(cached_answers, 0);
  }
}

/// The same traffic, in groups of up to 8 requests that arrive together and so go to Redis in one
/// call: a key met again in a call is decided on the state the requests before left, and
/// written once at the end of the call.
TEST_P(SameDecisions, AsTheMemoryStoreOnTheSameTrafficInBatches) {
  const auto& [algorithm, mode, code] = GetParam();
  const auto server = redis_with(code);
  StoreFixture fixture(config_for(algorithm, mode), "url: \"" + server->url() + "\"");
  const std::array<Duration, 7> steps{1us, 37ms, 100ms, 250ms, 499'999us, 1s, 3s};
  std::mt19937 random(2027);
  test::HeldPermits held;
  TimePoint now = at(0s);
  int limited = 0;  // or delayed
  std::size_t calls_with_a_key_twice = 0;
  for (int group = 0; group < 80; ++group) {
    now += steps[random() % steps.size()];
    std::vector<Costed> requests;
    std::vector<pipeline::Decision> memory;
    std::size_t first_client = 0;
    for (std::size_t i = 0, size = 1 + random() % 8; i < size; ++i) {
      const auto cost = static_cast<limiter::Permits>(1 + random() % 2);
      const Request request{.peer = random() % 4 == 0 ? "198.51.100.9" : "198.51.100.7"};
      first_client += request.peer == "198.51.100.7" ? 1U : 0U;
      requests.emplace_back(request, cost);
      memory.push_back(fixture.memory(request, now, cost));
    }
    calls_with_a_key_twice += first_client >= 2 ? 1 : 0;
    const std::uint64_t cached_before = fixture.store().cached_refusals();
    const std::vector<pipeline::Decision> redis = together(fixture, requests, now);
    const bool some_cached = fixture.store().cached_refusals() != cached_before;
    for (std::size_t i = 0; i < redis.size(); ++i) {
      // Refusals from the over-limit cache come without a round trip: exact but for the
      // retry-after (see expect_same). Which refusals of a group they were is not known.
      const bool cached = some_cached && redis[i].outcome != pipeline::Outcome::allowed;
      expect_same(redis[i], memory[i],
                  "group " + std::to_string(group) + ", request " + std::to_string(i), cached);
      limited += memory[i].outcome != pipeline::Outcome::allowed ? 1 : 0;
      held.keep(memory[i], redis[i]);
    }
    while (!held.empty() && random() % 2 == 0) {
      held.release_oldest(fixture);
    }
  }
  EXPECT_GT(limited, 20);
  EXPECT_GT(calls_with_a_key_twice, 40U);
}

/// Every algorithm in both modes (concurrency has no delay mode), as a function and as a script.
std::vector<std::tuple<Algorithm, std::string, std::string>> every_algorithm() {
  const std::vector<Algorithm> algorithms{
      {"fixed_window", "algorithm: fixed_window, limit: 5, window: 1s"},
      {"sliding_log", "algorithm: sliding_log, limit: 5, window: 1s"},
      {"sliding_window", "algorithm: sliding_window, limit: 6, window: 1s"},
      {"wheel", "algorithm: wheel, limit: 6, window: 1s, slots: 4"},
      {"token_bucket", "algorithm: token_bucket, rate: 10/s, burst: 4"},
      {"warmup", "algorithm: token_bucket, rate: 10/s, warmup: 2s"},
      {"leaky_bucket", "algorithm: leaky_bucket, rate: 10/s, burst: 3"},
      {"concurrency", "algorithm: concurrency, limit: 3"}};
  std::vector<std::tuple<Algorithm, std::string, std::string>> cases;
  for (const std::string code : {"functions", "scripts"}) {
    for (const Algorithm& algorithm : algorithms) {
      cases.emplace_back(algorithm, "reject", code);
      if (algorithm.name != "concurrency") {
        cases.emplace_back(algorithm, "delay", code);
      }
    }
  }
  return cases;
}

INSTANTIATE_TEST_SUITE_P(Algorithms, SameDecisions, ::testing::ValuesIn(every_algorithm()),
                         [](const auto& test) {
                           return std::get<0>(test.param).name + "_" + std::get<1>(test.param) +
                                  "_" + std::get<2>(test.param);
                         });

/// A limiter charged after the response (SPEC §9) on a route that reads the cost from a header.
struct SettledLimiter {
  std::string name;
  std::string limiter;  ///< Its YAML mapping.
  limiter::Permits estimate = 0;
};

void PrintTo(const SettledLimiter& settled, std::ostream* out) { *out << settled.name; }

std::string settled_config(const SettledLimiter& settled) {
  return "upstream: http://127.0.0.1:9000\nlimiters:\n  tested: {" + settled.limiter +
         "}\nroutes:\n  - {name: api, limiters: [tested], cost_from: {header: X-Cost, "
         "estimate: " +
         std::to_string(settled.estimate) + "}}\n";
}

class SettledDecisions : public ::testing::TestWithParam<std::tuple<SettledLimiter, std::string>> {
};

/// Charges settled after the response: admitted while the key has room (for the estimate),
/// then charged what the response said, into debt, or given back what the estimate reserved
/// beyond it; settled at once or while later requests come. Redis decides as the memory
/// limiters do, request after request.
TEST_P(SettledDecisions, AsTheMemoryStoreOnTheSameTraffic) {
  const auto& [settled, code] = GetParam();
  const auto server = redis_with(code);
  StoreFixture fixture(settled_config(settled), "url: \"" + server->url() + "\"");
  const std::array<Duration, 8> steps{0us, 1us, 37ms, 100ms, 250ms, 499'999us, 1s, 3s};
  const std::array<limiter::Permits, 6> costs{0, 1, 2, 3, 7, 12};
  std::mt19937 random(2027);
  std::deque<std::pair<pipeline::Decision, pipeline::Decision>> pending;
  TimePoint now = at(0s);
  int limited = 0;
  int settled_count = 0;
  for (int i = 0; i < 300; ++i) {
    now += steps[random() % steps.size()];
    const Request request{.peer = i % 5 == 0 ? "198.51.100.9" : "198.51.100.7"};
    const pipeline::Decision memory = fixture.memory(request, now);
    const std::uint64_t cached_before = fixture.store().cached_refusals();
    const pipeline::Decision redis = fixture.redis(request, now);
    expect_same(redis, memory, "request " + std::to_string(i),
                fixture.store().cached_refusals() != cached_before);
    limited += memory.outcome != pipeline::Outcome::allowed ? 1 : 0;
    if (memory.later_count != 0) {
      ASSERT_EQ(redis.later_count, memory.later_count);
      pending.emplace_back(memory, redis);
    }
    while (!pending.empty() && random() % 3 != 0) {
      const pipeline::ResponseSaid said{
          .status = random() % 2 == 0 ? 200U : 401U,
          .cost = random() % 5 == 0 ? std::nullopt : std::optional(costs[random() % costs.size()])};
      fixture.settle(pending.front().first, pending.front().second, said, now);
      pending.pop_front();
      ++settled_count;
    }
  }
  EXPECT_EQ(fixture.store().lost_settlements(), 0U);
  // The traffic must exercise every answer, or the comparison proves little.
  EXPECT_GT(fixture.store().settlements(), 50U);
  EXPECT_GT(limited, 10);
  EXPECT_LT(limited, 280);
  EXPECT_GT(settled_count, 100);
}

std::vector<std::tuple<SettledLimiter, std::string>> every_settled_limiter() {
  const std::vector<SettledLimiter> limiters{
      {"fixed_window", "algorithm: fixed_window, limit: 10, window: 1s, cost: response", 0},
      {"fixed_window_estimate", "algorithm: fixed_window, limit: 10, window: 1s, cost: response",
       3},
      {"sliding_log", "algorithm: sliding_log, limit: 10, window: 1s, cost: response", 2},
      {"sliding_window", "algorithm: sliding_window, limit: 10, window: 1s, cost: response", 3},
      {"wheel", "algorithm: wheel, limit: 10, window: 1s, slots: 4, cost: response", 3},
      {"token_bucket", "algorithm: token_bucket, rate: 10/s, burst: 8, cost: response", 3},
      {"warmup", "algorithm: token_bucket, rate: 10/s, warmup: 2s, cost: response", 2},
      {"leaky_bucket", "algorithm: leaky_bucket, rate: 10/s, burst: 6, cost: response", 3},
      {"count_if", "algorithm: sliding_window, limit: 4, window: 1s, count_if: {status: [401]}", 0},
      {"count_if_cost",
       "algorithm: token_bucket, rate: 10/s, burst: 8, cost: response, "
       "count_if: {status: [401]}",
       2}};
  std::vector<std::tuple<SettledLimiter, std::string>> cases;
  for (const std::string code : {"functions", "scripts"}) {
    for (const SettledLimiter& limiter : limiters) {
      cases.emplace_back(limiter, code);
    }
  }
  return cases;
}

INSTANTIATE_TEST_SUITE_P(Settlements, SettledDecisions,
                         ::testing::ValuesIn(every_settled_limiter()), [](const auto& test) {
                           return std::get<0>(test.param).name + "_" + std::get<1>(test.param);
                         });

/// A calendar window's traffic: steps that land on and just before its boundaries, from a start
/// a second before one.
struct CalendarTraffic {
  std::string name;
  std::string limiter;  ///< limit 5, and its calendar
  limiter::Calendar unit;
  std::string zone;
  TimePoint start;
  std::vector<Duration> steps;
};

void PrintTo(const CalendarTraffic& traffic, std::ostream* out) { *out << traffic.name; }

std::vector<CalendarTraffic> calendar_traffic() {
  using std::chrono::days;
  using std::chrono::sys_days;
  using namespace std::chrono;
  const auto limiter = [](std::string_view calendar) {
    return "algorithm: fixed_window, limit: 5, " + std::string(calendar);
  };
  return {
      // Berlin's clocks went back on 2026-10-25: a day of 25 hours.
      {"day_in_Berlin",
       limiter("calendar: day, timezone: Europe/Berlin"),
       limiter::Calendar::day,
       "Europe/Berlin",
       sys_days{2026y / October / 23} + 21h + 59min + 59s,
       {0us, 1us, 100ms, 250ms, 999ms, 1h, 5h, 23h}},
      {"week_in_Tokyo",
       limiter("calendar: week, timezone: Asia/Tokyo"),
       limiter::Calendar::week,
       "Asia/Tokyo",
       sys_days{2026y / November / 29} + 14h + 59min + 59s,
       {0us, 1us, 100ms, 999ms, days(1), days(2)}},
      {"month_in_UTC",
       limiter("calendar: month"),
       limiter::Calendar::month,
       "UTC",
       sys_days{2026y / January / 31} + 23h + 59min + 59s,
       {0us, 1us, 100ms, 999ms, days(1), days(4), days(9)}},
      {"year_in_New_York",
       limiter("calendar: year, timezone: America/New_York"),
       limiter::Calendar::year,
       "America/New_York",
       sys_days{2027y / January / 1} + 4h + 59min + 59s,
       {0us, 1us, 100ms, 999ms, days(30), days(91)}},
  };
}

class CalendarDecisions
    : public ::testing::TestWithParam<std::tuple<CalendarTraffic, std::string, std::string>> {};

/// Calendar windows (SPEC §8's plan quotas), whose bounds the proxy sends with each call:
/// the same decisions as the memory store's across midnights, a 25-hour day, weeks, months and
/// years, in both modes, as a function and as a script.
TEST_P(CalendarDecisions, AsTheMemoryStoreAcrossTheirBoundaries) {
  const auto& [traffic, mode, code] = GetParam();
  const auto server = redis_with(code);
  StoreFixture fixture(config_for({traffic.name, traffic.limiter}, mode),
                       "url: \"" + server->url() + "\"");
  std::string error;
  const limiter::CalendarPeriods periods(
      traffic.unit, traffic.zone == "UTC" ? nullptr : config::time_zone_named(traffic.zone, error));
  std::mt19937 random(2028);
  TimePoint now = traffic.start;
  const std::int64_t first_period = periods.index(now);
  int limited = 0;  // or delayed
  for (int i = 0; i < 300; ++i) {
    now += traffic.steps[random() % traffic.steps.size()];
    const auto cost = static_cast<limiter::Permits>(1 + random() % 2);
    const Request request{.peer = i % 4 == 0 ? "198.51.100.9" : "198.51.100.7"};
    const pipeline::Decision memory = fixture.memory(request, now, cost);
    const std::uint64_t cached_before = fixture.store().cached_refusals();
    const pipeline::Decision redis = fixture.redis(request, now, cost);
    expect_same(redis, memory, "request " + std::to_string(i),
                fixture.store().cached_refusals() != cached_before);
    limited += memory.outcome != pipeline::Outcome::allowed ? 1 : 0;
  }
  EXPECT_GT(periods.index(now) - first_period, 4);  // boundaries crossed
  EXPECT_GT(limited, 20);
  EXPECT_LT(limited, 280);
}

std::vector<std::tuple<CalendarTraffic, std::string, std::string>> every_calendar() {
  std::vector<std::tuple<CalendarTraffic, std::string, std::string>> cases;
  for (const std::string code : {"functions", "scripts"}) {
    for (const CalendarTraffic& traffic : calendar_traffic()) {
      for (const std::string mode : {"reject", "delay"}) {
        cases.emplace_back(traffic, mode, code);
      }
    }
  }
  return cases;
}

INSTANTIATE_TEST_SUITE_P(Calendars, CalendarDecisions, ::testing::ValuesIn(every_calendar()),
                         [](const auto& test) {
                           return std::get<0>(test.param).name + "_" + std::get<1>(test.param) +
                                  "_" + std::get<2>(test.param);
                         });

/// Expects `decision`'s outcome and its one limiter's status.
void expect_counted(const pipeline::Decision& decision, pipeline::Outcome outcome,
                    std::uint64_t remaining, Duration reset) {
  EXPECT_EQ(decision.outcome, outcome);
  ASSERT_EQ(decision.applied().size(), 1U);
  EXPECT_EQ(decision.applied()[0].status.remaining, remaining);
  EXPECT_EQ(decision.applied()[0].status.reset, reset);
}

/// Near a boundary the proxy's clock and Redis's may stand on either side of it. Redis's clock
/// decides, so replicas agree: a proxy still in October counts in November once Redis is, and
/// one already in November counts in October while Redis still is.
TEST(RedisStore, CountsACalendarWindowByRedissClockWhenTheProxysIsAcrossTheBoundary) {
  using namespace std::chrono;
  const test::RedisServer server;
  StoreFixture fixture(R"(
upstream: http://127.0.0.1:9000
limiters:
  monthly: {algorithm: fixed_window, limit: 3, calendar: month}
routes:
  - {name: api, limiters: [monthly]}
)",
                       "url: \"" + server.url() + "\"");
  const TimePoint november = sys_days{2026y / November / 1};
  // October, on both clocks: two of three.
  EXPECT_EQ(fixture.redis({}, november - 10ms, 2).outcome, pipeline::Outcome::allowed);
  // Redis still in October, the proxy already in November: October's last permit, then none.
  expect_counted(fixture.redis_with_clocks({}, november - 5ms, november + 5ms, 1),
                 pipeline::Outcome::allowed, 0, 5ms);  // November, by Redis's clock
  const pipeline::Decision other =
      fixture.redis_with_clocks({.peer = "198.51.100.99"}, november - 4ms, november + 6ms, 1);
  EXPECT_EQ(other.outcome, pipeline::Outcome::allowed);  // another client
  const pipeline::Decision full = fixture.redis_with_clocks({}, november - 4ms, november + 6ms, 1);
  EXPECT_EQ(full.outcome, pipeline::Outcome::limited);
  EXPECT_EQ(full.retry_after, 4ms);
  // Redis in November, the proxy still in October: November's count, which replicas already in
  // November share, and its reset at the end of November (guessed as long as October until the
  // proxy's clock passes the boundary: 31 days, not 30).
  expect_counted(fixture.redis_with_clocks({}, november + 1ms, november - 3ms, 2),
                 pipeline::Outcome::allowed, 1, days(31) - 1ms);
  expect_counted(fixture.redis({}, november + 2ms, 1), pipeline::Outcome::allowed, 0,
                 days(30) - 2ms);
}

/// On Redis's own clock (the proxy's way), a calendar day counts until the next UTC midnight and
/// its key lives as long.
TEST(RedisStore, CountsACalendarDayOnRedissOwnClock) {
  const test::RedisServer server;
  StoreFixture fixture(R"(
upstream: http://127.0.0.1:9000
limiters:
  daily: {algorithm: fixed_window, limit: 2, calendar: day}
routes:
  - {name: api, limiters: [daily]}
)",
                       "url: \"" + server.url() + "\"");
  const TimePoint now = limiter::SystemClock().now();
  const auto midnight = std::chrono::ceil<std::chrono::days>(now);
  EXPECT_EQ(fixture.redis({}, std::nullopt).outcome, pipeline::Outcome::allowed);
  const pipeline::Decision second = fixture.redis({}, std::nullopt);
  ASSERT_EQ(second.applied().size(), 1U);
  EXPECT_EQ(second.applied()[0].status.remaining, 0U);
  EXPECT_NEAR(std::chrono::duration<double>(second.applied()[0].status.reset).count(),
              std::chrono::duration<double>(midnight - now).count(), 2.0);
  const pipeline::Decision third = fixture.redis({}, std::nullopt);
  EXPECT_EQ(third.outcome, pipeline::Outcome::limited);
  const std::string cli = "redis-cli -p " + std::to_string(server.port()) + " ";
  const std::string key = test::output_of(cli + "--scan --pattern '*daily*'");
  ASSERT_FALSE(key.empty());
  const double ttl =
      std::stod(test::output_of(cli + "PTTL '" + key.substr(0, key.find('\n')) + "'")) / 1000;
  EXPECT_NEAR(ttl, std::chrono::duration<double>(midnight - now).count(), 2.0);
}

TEST(RedisStore, ChargesEveryLimiterOfARequestOrNone) {
  const test::RedisServer server;
  StoreFixture fixture(R"(
upstream: http://127.0.0.1:9000
limiters:
  per-ip: {algorithm: fixed_window, limit: 10, window: 1m}
  api-key: {algorithm: token_bucket, rate: 1/m, burst: 2, key: "header:X-Api-Key"}
  audit: {algorithm: sliding_log, limit: 1, window: 1m, shadow: true}
routes:
  - {name: api, limiters: [per-ip, api-key, audit]}
)",
                       "url: \"" + server.url() + "\"");
  const Request keyed{.headers = {{"X-Api-Key", "k1"}}};
  EXPECT_EQ(fixture.redis(keyed, at(0s)).outcome, pipeline::Outcome::allowed);
  EXPECT_EQ(fixture.redis(keyed, at(0s)).outcome, pipeline::Outcome::allowed);
  const pipeline::Decision refused = fixture.redis(keyed, at(0s));
  EXPECT_EQ(refused.outcome, pipeline::Outcome::limited);
  EXPECT_EQ(refused.retry_after, 60s);      // one token at 1/m
  ASSERT_EQ(refused.applied().size(), 2U);  // shadow limiters of a refused request: not charged
  EXPECT_EQ(refused.applied()[0].status.remaining, 8U);  // per-ip was not charged for it
  EXPECT_FALSE(refused.applied()[1].verdict.admitted);
  // Without the header only per-ip applies; the shadow limiter refused, but only reports it.
  const pipeline::Decision keyless = fixture.redis({}, at(0s));
  EXPECT_EQ(keyless.outcome, pipeline::Outcome::allowed);
  ASSERT_EQ(keyless.applied().size(), 2U);
  EXPECT_EQ(keyless.applied()[0].status.remaining, 7U);
  EXPECT_FALSE(keyless.applied()[1].verdict.admitted);
}

TEST(RedisStore, RefusesKeysKnownToBeOverTheirLimitWithoutARoundTrip) {
  const test::RedisServer server;
  StoreFixture fixture(R"(
upstream: http://127.0.0.1:9000
limiters:
  per-ip: {algorithm: fixed_window, limit: 2, window: 10s}
routes: [{name: api, limiters: [per-ip]}]
)",
                       "url: \"" + server.url() + "\"");
  EXPECT_EQ(fixture.redis({}, at(1s)).outcome, pipeline::Outcome::allowed);
  EXPECT_EQ(fixture.redis({}, at(1s)).outcome, pipeline::Outcome::allowed);
  EXPECT_EQ(fixture.redis({}, at(2s)).retry_after, 8s);  // from Redis
  EXPECT_EQ(fixture.store().cached_refusals(), 0U);
  const pipeline::Decision cached = fixture.redis({}, at(3s));
  EXPECT_EQ(cached.outcome, pipeline::Outcome::limited);
  EXPECT_EQ(cached.retry_after, 7s);
  EXPECT_EQ(fixture.store().cached_refusals(), 1U);
  // Another key is not refused by the cache; the cached key passes again at its reset.
  EXPECT_EQ(fixture.redis({.peer = "198.51.100.8"}, at(3s)).outcome, pipeline::Outcome::allowed);
  EXPECT_EQ(fixture.redis({}, at(10s)).outcome, pipeline::Outcome::allowed);
  EXPECT_EQ(fixture.store().cached_refusals(), 1U);
}

class OnError : public ::testing::TestWithParam<std::string> {
 protected:
  /// What on_error makes of the nth request of a client allowed two per hour (the memory
  /// limiters have seen only the requests made while Redis was down).
  static void expect_fallback(const pipeline::Decision& decision, int nth_while_down) {
    const std::string& on_error = GetParam();
    if (on_error == "allow") {
      EXPECT_EQ(decision.outcome, pipeline::Outcome::allowed);
      EXPECT_EQ(decision.applied().size(), 0U);  // nothing was counted: no headers
    } else if (on_error == "deny") {
      EXPECT_EQ(decision.outcome, pipeline::Outcome::denied);
      EXPECT_EQ(decision.status, 503U);
      EXPECT_EQ(decision.retry_after, 1s);
    } else {
      EXPECT_EQ(decision.outcome,
                nth_while_down < 2 ? pipeline::Outcome::allowed : pipeline::Outcome::limited);
    }
  }
};

TEST_P(OnError, RedisHungCostsTheTimeoutOnceThenRecoversWithinASecond) {
  test::RedisServer server;
  StoreFixture fixture(kTwoPerHour, timing_out_after_100ms(server, GetParam()));
  EXPECT_EQ(timed(fixture).first.outcome, pipeline::Outcome::allowed);
  server.pause();
  int slow = 0;
  for (int i = 0; i < 20; ++i) {
    const auto [decision, took] = timed(fixture);
    SCOPED_TRACE("request " + std::to_string(i) + " while Redis hangs");
    expect_fallback(decision, i);
    EXPECT_LE(took, kTimeout + kSlack);
    slow += took >= kTimeout ? 1 : 0;
  }
  EXPECT_EQ(slow, 1);  // the breaker opened on the first timeout
  EXPECT_FALSE(fixture.store().available());
  EXPECT_EQ(fixture.store().errors(), 1U);
  server.resume();
  EXPECT_LT(time_to_recover(fixture, 3s), 1s);
  // Redis kept its count, and counted the request that timed out when it woke up: a request
  // whose answer never came may still have been counted.
  EXPECT_EQ(timed(fixture).first.outcome, pipeline::Outcome::limited);
}

/// A token budget of 1000 an hour, charged what the X-Cost header says after the response.
const char* const kThousandTokensAnHour = R"(
upstream: http://127.0.0.1:9000
limiters:
  tokens: {algorithm: fixed_window, limit: 1000, window: 1h, cost: response}
routes: [{name: api, limiters: [tokens], cost_from: {header: X-Cost}}]
)";

/// Two replicas admit calls while the shared budget has room and settle each one's cost in
/// Redis: each sees the other's charges exactly, the debt included, until the window ends.
TEST(RedisStore, ReplicasShareOneTokenBudgetChargedAfterTheResponse) {
  const test::RedisServer server;
  const std::string store = "url: \"" + server.url() + "\"";
  std::array<std::unique_ptr<StoreFixture>, 2> replicas{
      std::make_unique<StoreFixture>(kThousandTokensAnHour, store),
      std::make_unique<StoreFixture>(kThousandTokensAnHour, store)};
  TimePoint now = at(10s);
  std::uint64_t charged = 0;
  for (std::size_t call = 0; call < 4;
       ++call) {  // 300 tokens each: the fourth takes the budget past
    StoreFixture& replica = *replicas[call % 2];
    const pipeline::Decision admitted = replica.redis({}, now);
    ASSERT_EQ(admitted.outcome, pipeline::Outcome::allowed) << "call " << call;
    ASSERT_EQ(admitted.applied().size(), 1U);
    EXPECT_EQ(admitted.applied()[0].status.remaining, 1000 - charged);  // the other's too
    replica.settle_in_redis(admitted, {.status = 200, .cost = 300}, now);
    charged += 300;
    now += 1s;
  }
  const Duration to_the_hour = std::chrono::ceil<std::chrono::hours>(now) - now;
  for (const auto& replica : replicas) {  // 1200 of 1000: limited until the hour ends
    const pipeline::Decision refused = replica->redis({}, now);
    EXPECT_EQ(refused.outcome, pipeline::Outcome::limited);
    EXPECT_EQ(refused.retry_after, to_the_hour);
  }
  EXPECT_EQ(replicas[0]->redis({}, now + to_the_hour).outcome, pipeline::Outcome::allowed);
  EXPECT_EQ(replicas[0]->store().settlements() + replicas[1]->store().settlements(), 4U);
}

/// While Redis cannot take a settlement, `on_error: local` charges the memory limiters, which
/// then count the key as the requests that follow on_error see it; other policies lose it,
/// counted.
TEST(RedisStore, ASettlementRedisCannotTakeFollowsOnError) {
  for (const std::string on_error : {"local", "allow"}) {
    SCOPED_TRACE(on_error);
    test::RedisServer server;
    StoreFixture fixture(kThousandTokensAnHour, timing_out_after_100ms(server, on_error));
    const pipeline::Decision first = fixture.redis({}, std::nullopt);
    const pipeline::Decision second = fixture.redis({}, std::nullopt);
    ASSERT_EQ(second.outcome, pipeline::Outcome::allowed);
    server.kill();
    // Sent before Redis is known to be gone: lost, and the breaker opens.
    fixture.settle_in_redis(first, {.status = 200, .cost = 400}, std::nullopt);
    EXPECT_EQ(fixture.store().lost_settlements(), 1U);
    EXPECT_FALSE(fixture.store().available());
    // Then as on_error says, at once.
    fixture.settle_in_redis(second, {.status = 200, .cost = 999}, std::nullopt);
    const std::optional<limiter::Status> local =
        fixture.shared_pipeline().peek("tokens", "198.51.100.7", limiter::SystemClock().now());
    ASSERT_TRUE(local.has_value());
    if (on_error == "local") {
      EXPECT_EQ(fixture.store().lost_settlements(), 1U);
      EXPECT_EQ(local->remaining, 1U);
    } else {
      EXPECT_EQ(fixture.store().lost_settlements(), 2U);
      EXPECT_EQ(local->remaining, 1000U);
    }
  }
}

TEST(RedisStore, RequestsInFlightWhenRedisHangsWaitNoLongerThanTheTimeout) {
  test::RedisServer server;
  StoreFixture fixture(kTwoPerHour, timing_out_after_100ms(server, "allow"));
  EXPECT_EQ(timed(fixture).first.outcome, pipeline::Outcome::allowed);
  server.pause();
  // 50 requests of 50 clients at once, all sent to a Redis that no longer answers.
  constexpr std::size_t kInFlight = 50;
  std::vector<pipeline::Decision> decisions(kInFlight);
  std::vector<pipeline::Charges> charges(kInFlight);
  std::vector<Duration> took(kInFlight);
  std::vector<Request> requests(kInFlight);
  std::size_t done = 0;
  pipeline::Pipeline& pipeline = fixture.shared_pipeline();
  for (std::size_t i = 0; i < kInFlight; ++i) {
    requests[i].peer = "198.51.100." + std::to_string(i + 1);
    const TimePoint now = limiter::SystemClock().now();
    ASSERT_TRUE(pipeline.prepare(test::PipelineFixture::view_of(requests[i]), now, std::nullopt,
                                 decisions[i], charges[i]));
    net::co_spawn(
        fixture.loop().io(),
        [&, i, now]() -> io::Awaitable<void> {
          const auto started = std::chrono::steady_clock::now();
          co_await test::decide_through(fixture.store(), 0, pipeline, decisions[i], charges[i],
                                        now);
          took[i] = std::chrono::steady_clock::now() - started;
        },
        [&](std::exception_ptr) { ++done; });
  }
  while (done < kInFlight) {
    fixture.loop().run_for(1ms);
  }
  for (std::size_t i = 0; i < kInFlight; ++i) {
    SCOPED_TRACE("request " + std::to_string(i));
    EXPECT_EQ(decisions[i].outcome, pipeline::Outcome::allowed);
    EXPECT_LE(took[i], kTimeout + kSlack);
  }
  EXPECT_EQ(fixture.store().errors(), kInFlight);  // each one timed out once
  EXPECT_FALSE(fixture.store().available());
  EXPECT_LT(timed(fixture).second, kTimeout);  // the next one does not try
  server.resume();
}

TEST_P(OnError, RedisKilledFailsFastAndARestartedOneIsFoundWithinASecond) {
  test::RedisServer server;
  StoreFixture fixture(kTwoPerHour, timing_out_after_100ms(server, GetParam()));
  EXPECT_EQ(timed(fixture).first.outcome, pipeline::Outcome::allowed);
  server.kill();
  for (int i = 0; i < 20; ++i) {
    const auto [decision, took] = timed(fixture);
    SCOPED_TRACE("request " + std::to_string(i) + " while Redis is dead");
    expect_fallback(decision, i);
    EXPECT_LE(took, kTimeout + kSlack);
  }
  EXPECT_FALSE(fixture.store().available());
  server.start();  // a new Redis on the same port, empty
  EXPECT_LT(time_to_recover(fixture, 3s), 1s);
  EXPECT_EQ(timed(fixture).first.outcome, pipeline::Outcome::allowed);
  EXPECT_EQ(timed(fixture).first.outcome, pipeline::Outcome::allowed);
  EXPECT_EQ(timed(fixture).first.outcome, pipeline::Outcome::limited);
}

INSTANTIATE_TEST_SUITE_P(Policies, OnError, ::testing::Values("allow", "deny", "local"),
                         [](const auto& test) { return test.param; });

/// Two replicas (two stores, each on its own thread and loop) hammer one Redis at once: together
/// they admit exactly the limit.
class SharedLimit : public ::testing::TestWithParam<Algorithm> {};

TEST_P(SharedLimit, TwoReplicasAdmitExactlyTheLimitTogether) {
  const test::RedisServer server;
  const std::string yaml = "upstream: http://127.0.0.1:9000\nlimiters:\n  shared: {" +
                           GetParam().limiter + "}\nroutes: [{name: api, limiters: [shared]}]\n";
  const std::string store = "url: \"" + server.url() + "\", timeout: 1s";
  constexpr std::size_t kWaves = 30;
  constexpr std::size_t kPerWave = 5;  // requests in flight at once, per replica
  constexpr std::size_t kPerReplica = kWaves * kPerWave;
  std::array<std::atomic<int>, 2> admitted{};
  std::latch connected(2);
  std::vector<std::thread> replicas;
  for (std::size_t r = 0; r < 2; ++r) {
    replicas.emplace_back([&, r] {
      StoreFixture replica(yaml, store);
      connected.arrive_and_wait();  // both start at once
      std::vector<pipeline::Decision> decisions(kPerReplica);
      std::vector<pipeline::Charges> charges(kPerReplica);
      std::size_t done = 0;
      pipeline::Pipeline& pipeline = replica.shared_pipeline();
      const Request request{};
      for (std::size_t i = 0; i < kPerReplica; ++i) {
        const TimePoint now = limiter::SystemClock().now();
        ASSERT_TRUE(pipeline.prepare(test::PipelineFixture::view_of(request), now, std::nullopt,
                                     decisions[i], charges[i]));
        net::co_spawn(
            replica.loop().io(),
            test::decide_through(replica.store(), 0, pipeline, decisions[i], charges[i], now),
            [&](std::exception_ptr) { ++done; });
        if ((i + 1) % kPerWave == 0) {
          while (done <= i) {
            replica.loop().run_for(1ms);
          }
        }
      }
      for (const pipeline::Decision& decision : decisions) {
        admitted[r] += decision.outcome == pipeline::Outcome::allowed ? 1 : 0;
      }
    });
  }
  for (std::thread& replica : replicas) {
    replica.join();
  }
  EXPECT_EQ(admitted[0] + admitted[1], 100);
  EXPECT_GT(admitted[0], 0);
  EXPECT_GT(admitted[1], 0);
}

INSTANTIATE_TEST_SUITE_P(
    Algorithms, SharedLimit,
    ::testing::Values(
        // Windows far longer than the test, so that none ends during it.
        Algorithm{"fixed_window", "algorithm: fixed_window, limit: 100, window: 1d"},
        Algorithm{"sliding_log", "algorithm: sliding_log, limit: 100, window: 1h"},
        Algorithm{"token_bucket", "algorithm: token_bucket, rate: 1/h, burst: 100"}),
    [](const auto& test) { return test.param.name; });

}  // namespace
}  // namespace sluice::store::redis
