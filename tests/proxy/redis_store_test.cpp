// The Redis store against a real redis-server started by the test: it decides as the memory
// limiters do (the same traffic, on a simulated clock, through both), it is all or nothing across
// a request's limiters, and it refuses keys it knows are over their limit without a round trip.
#include "proxy/redis_store.hpp"

#include <gtest/gtest.h>

#include <array>
#include <deque>
#include <random>
#include <string>

#include "tests/proxy/pipeline_fixture.hpp"
#include "tests/support/event_loop.hpp"
#include "tests/support/manual_clock.hpp"
#include "tests/support/redis_server.hpp"

namespace sluice::proxy {
namespace {

namespace net = boost::asio;
using namespace std::chrono_literals;
using Request = test::PipelineFixture::Request;
using limiter::Duration;
using limiter::TimePoint;
using test::at;

/// The same configuration twice: one pipeline decides with its memory limiters, the other
/// through a Redis store on a one-connection loop.
class StoreFixture {
 public:
  /// `yaml` without a store section; `store` is added to it (url, and more options).
  StoreFixture(const std::string& yaml, const std::string& store)
      : memory_(yaml),
        shared_(yaml + "store: {type: redis, redis: {pool: 1, " + store + "}}\n"),
        store_(shared_.config().store.redis, 1) {
    loop_.run([this] { return store_.open(0); });
  }
  StoreFixture(const StoreFixture&) = delete;
  StoreFixture& operator=(const StoreFixture&) = delete;
  StoreFixture(StoreFixture&&) = delete;
  StoreFixture& operator=(StoreFixture&&) = delete;
  ~StoreFixture() { store_.close(0); }

  Decision memory(const Request& request, TimePoint now,
                  std::optional<limiter::Permits> cost = std::nullopt) {
    return memory_.send(request, now, cost);
  }

  /// Through the Redis store, deciding at `now` (a simulated clock), or at Redis's own time.
  Decision redis(const Request& request, std::optional<TimePoint> now,
                 std::optional<limiter::Permits> cost = std::nullopt) {
    Decision decision;
    Charges charges;
    const TimePoint local = now.value_or(limiter::SystemClock().now());
    if (shared_.pipeline().prepare(test::PipelineFixture::view_of(request), local, cost, decision,
                                   charges)) {
      store_.decide_at(now);
      loop_.run([&]() -> net::awaitable<void> {
        co_await store_.decide(0, shared_.pipeline(), decision, charges, local);
      });
    }
    return decision;
  }

  void release(const Decision& memory, const Decision& redis) {
    memory_.pipeline().release(memory);
    store_.release(0, redis);
    loop_.poll();
  }

  RedisStore& store() { return store_; }

 private:
  test::PipelineFixture memory_;
  test::PipelineFixture shared_;
  test::EventLoop loop_;
  RedisStore store_;
};

/// Redis works in whole microseconds: a duration as the store reports it.
Duration in_microseconds(Duration d) {
  if (d == Duration::max()) {
    return d;
  }
  return std::chrono::ceil<std::chrono::microseconds>(d);
}

/// `cached`: the store refused from its over-limit cache. The refusal must be the same; its
/// retry-after is the one Redis gave, which later admissions of smaller costs (or, live, other
/// replicas) may have pushed back: never later than the truth. Its headers may lag.
void expect_same(const Decision& redis, const Decision& memory, const std::string& where,
                 bool cached) {
  SCOPED_TRACE(where);
  EXPECT_EQ(name_of(redis.outcome), name_of(memory.outcome));
  EXPECT_EQ(redis.status, memory.status);
  EXPECT_EQ(redis.hold, in_microseconds(memory.hold));
  if (cached) {
    EXPECT_LE(redis.retry_after, in_microseconds(memory.retry_after));
    return;
  }
  EXPECT_EQ(redis.retry_after, in_microseconds(memory.retry_after));
  ASSERT_EQ(redis.applied().size(), memory.applied().size());
  for (std::size_t i = 0; i < redis.applied().size(); ++i) {
    const LimiterReport& r = redis.applied()[i];
    const LimiterReport& m = memory.applied()[i];
    EXPECT_EQ(r.limiter->name, m.limiter->name);
    EXPECT_EQ(r.verdict.admitted, m.verdict.admitted);
    EXPECT_EQ(r.verdict.hold, in_microseconds(m.verdict.hold));
    EXPECT_EQ(r.verdict.retry_after, in_microseconds(m.verdict.retry_after));
    EXPECT_EQ(r.status.remaining, m.status.remaining);
    EXPECT_EQ(r.status.reset, in_microseconds(m.status.reset));
  }
  EXPECT_EQ(redis.permit_count, memory.permit_count);
}

struct Algorithm {
  std::string name;
  std::string limiter;  ///< The limiter's YAML mapping, without mode.
};

std::string config_for(const Algorithm& algorithm, std::string_view mode) {
  return "upstream: http://127.0.0.1:9000\nlimiters:\n  tested: {" + algorithm.limiter +
         ", mode: " + std::string(mode) + ", max_delay: 400ms}\nroutes:\n" +
         "  - {name: api, limiters: [tested]}\n";
}

class SameDecisions : public ::testing::TestWithParam<std::tuple<Algorithm, std::string>> {};

/// Seeded traffic with steps on and around window and bucket edges, costs of 1 and 2, and
/// (for concurrency) permits given back in arrival order.
TEST_P(SameDecisions, AsTheMemoryStoreOnTheSameTraffic) {
  const auto& [algorithm, mode] = GetParam();
  const test::RedisServer server;
  StoreFixture fixture(config_for(algorithm, mode), "url: \"" + server.url() + "\"");
  const std::array<Duration, 9> steps{0us, 0us, 1us, 37ms, 100ms, 250ms, 499'999us, 1s, 3s};
  std::mt19937 random(2026);
  std::deque<std::pair<Decision, Decision>> held;
  TimePoint now = at(0s);
  int limited = 0;  // or delayed
  int cached_answers = 0;
  for (int i = 0; i < 400; ++i) {
    now += steps[random() % steps.size()];
    const auto cost = static_cast<limiter::Permits>(1 + random() % 2);
    const Request request{.peer = i % 5 == 0 ? "198.51.100.9" : "198.51.100.7"};
    const Decision memory = fixture.memory(request, now, cost);
    const std::uint64_t cached_before = fixture.store().cached_refusals();
    const Decision redis = fixture.redis(request, now, cost);
    const bool cached = fixture.store().cached_refusals() != cached_before;
    cached_answers += cached ? 1 : 0;
    expect_same(redis, memory, "request " + std::to_string(i), cached);
    limited += memory.outcome != Outcome::allowed ? 1 : 0;
    if (memory.permit_count != 0) {
      held.emplace_back(memory, redis);
    }
    if (!held.empty() && random() % 3 == 0) {
      fixture.release(held.front().first, held.front().second);
      held.pop_front();
    }
  }
  // The traffic must exercise every answer, or the comparison proves little.
  EXPECT_GT(limited, 20);  // limited or delayed
  EXPECT_LT(limited, 380);
  if (std::get<0>(GetParam()).name != "concurrency") {
    EXPECT_GT(cached_answers, 0);
  }
}

/// Every algorithm in both modes (concurrency has no delay mode).
std::vector<std::tuple<Algorithm, std::string>> every_algorithm() {
  const std::vector<Algorithm> algorithms{
      {"fixed_window", "algorithm: fixed_window, limit: 5, window: 1s"},
      {"sliding_log", "algorithm: sliding_log, limit: 5, window: 1s"},
      {"sliding_window", "algorithm: sliding_window, limit: 6, window: 1s"},
      {"wheel", "algorithm: wheel, limit: 6, window: 1s, slots: 4"},
      {"token_bucket", "algorithm: token_bucket, rate: 10/s, burst: 4"},
      {"warmup", "algorithm: token_bucket, rate: 10/s, warmup: 2s"},
      {"leaky_bucket", "algorithm: leaky_bucket, rate: 10/s, burst: 3"},
      {"concurrency", "algorithm: concurrency, limit: 3"}};
  std::vector<std::tuple<Algorithm, std::string>> cases;
  for (const Algorithm& algorithm : algorithms) {
    cases.emplace_back(algorithm, "reject");
    if (algorithm.name != "concurrency") {
      cases.emplace_back(algorithm, "delay");
    }
  }
  return cases;
}

INSTANTIATE_TEST_SUITE_P(Algorithms, SameDecisions, ::testing::ValuesIn(every_algorithm()),
                         [](const auto& test) {
                           return std::get<0>(test.param).name + "_" + std::get<1>(test.param);
                         });

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
  EXPECT_EQ(fixture.redis(keyed, at(0s)).outcome, Outcome::allowed);
  EXPECT_EQ(fixture.redis(keyed, at(0s)).outcome, Outcome::allowed);
  const Decision refused = fixture.redis(keyed, at(0s));
  EXPECT_EQ(refused.outcome, Outcome::limited);
  EXPECT_EQ(refused.retry_after, 60s);      // one token at 1/m
  ASSERT_EQ(refused.applied().size(), 2U);  // shadow limiters of a refused request: not charged
  EXPECT_EQ(refused.applied()[0].status.remaining, 8U);  // per-ip was not charged for it
  EXPECT_FALSE(refused.applied()[1].verdict.admitted);
  // Without the header only per-ip applies; the shadow limiter refused, but only reports it.
  const Decision keyless = fixture.redis({}, at(0s));
  EXPECT_EQ(keyless.outcome, Outcome::allowed);
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
  EXPECT_EQ(fixture.redis({}, at(1s)).outcome, Outcome::allowed);
  EXPECT_EQ(fixture.redis({}, at(1s)).outcome, Outcome::allowed);
  EXPECT_EQ(fixture.redis({}, at(2s)).retry_after, 8s);  // from Redis
  EXPECT_EQ(fixture.store().cached_refusals(), 0U);
  const Decision cached = fixture.redis({}, at(3s));
  EXPECT_EQ(cached.outcome, Outcome::limited);
  EXPECT_EQ(cached.retry_after, 7s);
  EXPECT_EQ(fixture.store().cached_refusals(), 1U);
  // Another key is not refused by the cache; the cached key passes again at its reset.
  EXPECT_EQ(fixture.redis({.peer = "198.51.100.8"}, at(3s)).outcome, Outcome::allowed);
  EXPECT_EQ(fixture.redis({}, at(10s)).outcome, Outcome::allowed);
  EXPECT_EQ(fixture.store().cached_refusals(), 1U);
}

}  // namespace
}  // namespace sluice::proxy
