// Batching: requests that arrive together on a loop wait in one batch and are decided by one call
// of decide.lua per lane, against a real redis-server started by the test. The batches of a lane
// directly, then through the store: calls bounded by kMaxBatch, the requests waiting while Redis
// hangs bounded, and the code loaded again when a flush lands among requests in flight.
#include "proxy/store/redis/redis_batching.hpp"

#include <gtest/gtest.h>

#include <array>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <deque>
#include <string>
#include <vector>

#include "proxy/store/redis/redis_lanes.hpp"
#include "tests/proxy/store/redis/redis_test_helpers.hpp"
#include "tests/support/pipeline_fixture.hpp"
#include "tests/support/redis_server.hpp"
#include "tests/support/redis_store_fixture.hpp"

namespace sluice::store::redis {
namespace {

namespace net = boost::asio;
using namespace std::chrono_literals;
using limiter::TimePoint;
using test::allowed_among;
using test::decide_one;
using test::kHundredPerHour;
using test::redis_info;
using test::redis_with;
using test::StoreFixture;
using test::times;
using test::together;

/// Waits in the lane's batch, then counts itself done.
io::Awaitable<void> wait_in(RedisBatching& batching, Lane& lane, BatchWaiter& waiter,
                            std::size_t& done) {
  co_await batching.wait_in_batch(lane, co_await net::this_coro::executor, waiter);
  ++done;
}

/// `count` requests of one client, prepared by `pipeline` at `now`, waiting in the loop's batches
/// at once; their waiters once all are decided.
std::deque<BatchWaiter> wait_together(test::LoopParts& redis, test::PipelineFixture& pipeline,
                                      std::deque<pipeline::Decision>& decisions,
                                      std::deque<pipeline::Charges>& charges,
                                      std::deque<pipeline::ChargeResult>& results,
                                      std::size_t count, TimePoint now) {
  std::deque<BatchWaiter> waiters;
  const test::Request request{};
  for (std::size_t i = 0; i < count; ++i) {
    pipeline::Decision& decision = decisions.emplace_back();
    pipeline::Charges& charged = charges.emplace_back();
    EXPECT_TRUE(pipeline.pipeline().prepare(test::PipelineFixture::view_of(request), now,
                                            std::nullopt, decision, charged));
    waiters.emplace_back(BatchWaiter{.decision = decision,
                                     .charges = charged,
                                     .permit = i + 1,
                                     .now = now,
                                     .result = results.emplace_back()});
  }
  std::size_t done = 0;
  for (BatchWaiter& waiter : waiters) {
    net::co_spawn(redis.events.io(),
                  wait_in(redis.loop.batching, redis.loop.lanes[0], waiter, done), net::detached);
  }
  while (done < count) {
    redis.events.run_for(1ms);
  }
  return waiters;
}

TEST(RedisBatching, RequestsThatArriveTogetherShareOneCallAndALoneOneHasItsOwn) {
  const test::RedisServer server;
  test::LoopParts redis("url: \"" + server.url() + "\"");
  redis.open();
  test::PipelineFixture pipeline(kHundredPerHour);
  std::deque<pipeline::Decision> decisions;
  std::deque<pipeline::Charges> charges;
  std::deque<pipeline::ChargeResult> results;
  const TimePoint now = limiter::SystemClock().now();
  const auto arrived = wait_together(redis, pipeline, decisions, charges, results, 10, now);
  EXPECT_EQ(redis.loop.batching.calls().value(), 1U);
  EXPECT_EQ(redis.loop.batching.requests_in_calls().value(), 10U);
  for (std::size_t i = 0; i < arrived.size(); ++i) {
    SCOPED_TRACE("request " + std::to_string(i));
    ASSERT_TRUE(arrived[i].decided);
    EXPECT_TRUE(arrived[i].result.live_admitted);
    // Decided in the order they joined the batch: each sees the ones before it counted.
    EXPECT_EQ(arrived[i].result.outcomes[0].status.remaining, 100 - (i + 1));
  }
  const auto alone = wait_together(redis, pipeline, decisions, charges, results, 1, now);
  EXPECT_TRUE(alone[0].decided);
  EXPECT_EQ(redis.loop.batching.calls().value(), 2U);
  EXPECT_EQ(redis.loop.batching.requests_in_calls().value(), 11U);
}

TEST(RedisBatching, ALaneIsFullOnlyWhenNoBatchIsOpenAndTheQueueIsAtItsBound) {
  LaneBatches batches;
  EXPECT_FALSE(batches.full());
  DecisionBatch* const some_batch = nullptr;
  batches.queued.assign(RedisBatching::kQueuedBatches, some_batch);
  EXPECT_TRUE(batches.full());
  net::io_context io;
  DecisionBatch open(io.get_executor());
  batches.open = &open;  // a request joins the open batch, however many wait
  EXPECT_FALSE(batches.full());
}

TEST(RedisBatching, DecidesRequestsThatArriveTogetherInOneCallEachAndExactly) {
  // 300 requests in flight at once on one loop, on one key limited to 100: batches of at most
  // kMaxBatch, one FCALL each, and exactly 100 admitted.
  test::RedisServer server;
  StoreFixture fixture(kHundredPerHour, "url: \"" + server.url() + "\"");
  const auto decisions = together(fixture, times(300, {}));
  EXPECT_EQ(allowed_among(decisions), 100U);
  EXPECT_EQ(fixture.store().errors(), 0U);
  static_assert(RedisBatching::kMaxBatch == 128);
  EXPECT_EQ(redis_info(fixture, "commandstats", "cmdstat_fcall:calls="), 3);  // 128 + 128 + 44
  // The route's bucket took only what was admitted (all or nothing across limiters).
  EXPECT_EQ(fixture.redis({.peer = "198.51.100.20"}, std::nullopt).applied()[1].status.remaining,
            1000U - 100 - 1);
  // A lone request is sent at once, in a call of its own.
  fixture.redis({.peer = "198.51.100.21"}, std::nullopt);
  EXPECT_EQ(redis_info(fixture, "commandstats", "cmdstat_fcall:calls="), 5);
}

TEST(RedisBatching, BoundsTheRequestsWaitingWhileRedisHangs) {
  // Redis sleeps with its connection up and a long timeout: 3000 requests arrive at once. The
  // ones that find kQueuedBatches batches waiting follow on_error at once (allow, counted as
  // errors); the others wait for Redis and are decided when it wakes up.
  test::RedisServer server;
  StoreFixture fixture(kHundredPerHour, "url: \"" + server.url() + "\", timeout: 5s");
  server.pause();
  constexpr std::size_t kRequests = 3000;
  std::vector<pipeline::Decision> decisions(kRequests);
  std::vector<pipeline::Charges> charges(kRequests);
  std::size_t done = 0;
  const TimePoint now = limiter::SystemClock().now();
  for (std::size_t i = 0; i < kRequests; ++i) {
    net::co_spawn(fixture.loop().io(),
                  decide_one(fixture, {.peer = "198.51.100.40"}, std::nullopt, now, decisions[i],
                             charges[i], done),
                  net::detached);
  }
  fixture.loop().run_for(200ms);
  constexpr std::size_t kMostWaiting =
      (RedisBatching::kCallsInFlight + RedisBatching::kQueuedBatches) * RedisBatching::kMaxBatch;
  EXPECT_GE(done, kRequests - kMostWaiting);
  EXPECT_LT(done, kRequests);  // the first ones wait for Redis
  EXPECT_EQ(fixture.store().errors(), done);
  const std::size_t answered_at_once = done;
  server.resume();
  while (done < kRequests) {
    fixture.loop().run_for(1ms);
  }
  // The first 100 of those that waited are admitted by Redis, the others limited; those that
  // could not wait were let through uncounted.
  EXPECT_EQ(allowed_among(decisions), answered_at_once + 100);
  EXPECT_EQ(fixture.store().errors(), answered_at_once);
}

/// `what` FLUSH (FUNCTION or SCRIPT) from a connection of its own, counted in `flushed` when
/// Redis says OK.
io::Awaitable<void> flush_concurrently(StoreFixture& fixture, std::string what,
                                       std::size_t& flushed) {
  auto connection = co_await RedisConnection::open(fixture.store().options().endpoint,
                                                   fixture.store().options().url, 1s);
  const std::array<std::string_view, 2> flush{what, "FLUSH"};
  const RedisReply reply = co_await connection->command(flush, 1s);
  flushed += reply.value.text == "OK" ? 1U : 0U;
  connection->close();
}

class CodeFlushed : public ::testing::TestWithParam<std::string> {};

TEST_P(CodeFlushed, UnderLoadTheStoreLoadsItAgainAndDecidesEveryRequest) {
  // A flush lands among 200 requests in flight, three times: the batch sent after it finds its
  // code gone (Function not found, NOSCRIPT), loads it again, and is decided; nobody follows
  // on_error.
  const std::string& code = GetParam();
  const auto server = redis_with(code);
  StoreFixture fixture(kHundredPerHour, "url: \"" + server->url() + "\", on_error: deny");
  ASSERT_EQ(fixture.store().uses_functions(), code == "functions");
  std::size_t flushed = 0;
  for (int wave = 0; wave < 3; ++wave) {
    const auto decisions = together(
        fixture, times(200, {.peer = "198.51.100." + std::to_string(30 + wave)}), std::nullopt,
        flush_concurrently(fixture, code == "functions" ? "FUNCTION" : "SCRIPT", flushed));
    EXPECT_EQ(allowed_among(decisions), 100U) << "wave " << wave;
  }
  EXPECT_EQ(flushed, 3U);
  EXPECT_EQ(fixture.store().errors(), 0U);
  // Loaded at the start, and again after a flush.
  EXPECT_GE(redis_info(fixture, "commandstats",
                       code == "functions" ? "cmdstat_function|load:calls="
                                           : "cmdstat_script|load:calls="),
            code == "functions" ? 2 : 4);
}

INSTANTIATE_TEST_SUITE_P(Redis, CodeFlushed, ::testing::Values("functions", "scripts"),
                         [](const auto& test) { return test.param; });

}  // namespace
}  // namespace sluice::store::redis
