// Concurrency permits given back to Redis (release.lua): which charges of a request hold one, a
// permit given back on its key's lane, against a real redis-server started by the test; then
// through the store, a release after the code was flushed, and the permits of a decision that
// timed out, which Redis takes when it wakes up.
#include "proxy/store/redis/permit_releases.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <deque>

#include "tests/proxy/store/redis/redis_test_helpers.hpp"
#include "tests/support/pipeline_fixture.hpp"
#include "tests/support/redis_server.hpp"
#include "tests/support/redis_store_fixture.hpp"

namespace sluice::store::redis {
namespace {

using namespace std::chrono_literals;
using test::flush_code;
using test::kOneAtATime;
using test::StoreFixture;
using test::time_to_recover;
using test::timing_out_after_100ms;

const char* const kOneAtATimeAndTenPerHour = R"(
upstream: http://127.0.0.1:9000
limiters:
  per-ip: {algorithm: fixed_window, limit: 10, window: 1h}
  one: {algorithm: concurrency, limit: 1}
routes: [{name: api, limiters: [per-ip, one]}]
)";

TEST(RedisReleases, APermitIsHeldForEachConcurrencyChargeOfARequest) {
  test::PipelineFixture fixture(kOneAtATimeAndTenPerHour);
  pipeline::Decision decision;
  pipeline::Charges charges;
  ASSERT_TRUE(fixture.pipeline().prepare(test::PipelineFixture::view_of({}),
                                         limiter::SystemClock().now(), std::nullopt, decision,
                                         charges));
  ASSERT_EQ(charges.count, 2U);
  const std::vector<pipeline::Permit> permits = PermitReleases::permits_of(decision, charges);
  ASSERT_EQ(permits.size(), 1U);
  EXPECT_EQ(permits[0].config->name, "one");
  EXPECT_EQ(permits[0].cost, 1U);
  EXPECT_EQ(permits[0].shared_key, charges.shared_key[1]);
}

TEST(RedisReleases, GivesBackAPermitOnItsKeysLane) {
  const test::RedisServer server;
  test::LoopParts redis("url: \"" + server.url() + "\"");
  redis.open();
  test::PipelineFixture fixture(kOneAtATime);
  // Requests of one client, decided one after the other in the loop's one lane.
  std::deque<pipeline::Decision> decisions;
  std::deque<pipeline::Charges> charges;
  std::deque<pipeline::ChargeResult> results;
  std::deque<BatchWaiter> waiters;
  const auto decide = [&]() -> BatchWaiter& {
    pipeline::Decision& decision = decisions.emplace_back();
    pipeline::Charges& charged = charges.emplace_back();
    const limiter::TimePoint now = limiter::SystemClock().now();
    EXPECT_TRUE(fixture.pipeline().prepare(test::PipelineFixture::view_of({}), now, std::nullopt,
                                           decision, charged));
    BatchWaiter& waiter = waiters.emplace_back(BatchWaiter{.decision = decision,
                                                           .charges = charged,
                                                           .permit = waiters.size() + 1,
                                                           .now = now,
                                                           .result = results.emplace_back()});
    redis.events.run([&]() -> io::Awaitable<void> {
      co_await redis.loop.batching.wait_in_batch(redis.loop.lanes[0],
                                                 redis.events.io().get_executor(), waiter);
    });
    EXPECT_TRUE(waiter.decided);
    return waiter;
  };
  const BatchWaiter& first = decide();
  EXPECT_TRUE(first.result.live_admitted);
  EXPECT_FALSE(decide().result.live_admitted);  // the one permit is held
  redis.loop.releases.send(PermitReleases::permits_of(first.decision, first.charges), first.permit);
  redis.events.run_for(200ms);
  EXPECT_TRUE(decide().result.live_admitted);
}

TEST(RedisReleases, ReleasesPermitsAfterTheCodeWasFlushed) {
  test::RedisServer server;
  StoreFixture fixture(kOneAtATime, "url: \"" + server.url() + "\"");
  const pipeline::Decision first = fixture.redis({}, std::nullopt);
  EXPECT_EQ(first.outcome, pipeline::Outcome::allowed);
  EXPECT_EQ(fixture.redis({}, std::nullopt).outcome, pipeline::Outcome::limited);
  // Redis forgets the code (FUNCTION FLUSH, a failover): the release must load it again.
  flush_code(fixture);
  fixture.store().release(0, first);
  fixture.loop().run_for(200ms);
  EXPECT_EQ(fixture.redis({}, std::nullopt).outcome, pipeline::Outcome::allowed);
}

TEST(RedisReleases, GivesBackThePermitsOfADecisionThatTimedOut) {
  test::RedisServer server;
  StoreFixture fixture(kOneAtATime, timing_out_after_100ms(server, "allow"));
  server.pause();
  // Sent, unanswered: when Redis wakes up it takes the permit, then gives it back.
  EXPECT_EQ(fixture.redis({}, std::nullopt).outcome,
            pipeline::Outcome::allowed);  // on_error: allow
  server.resume();
  EXPECT_LT(time_to_recover(fixture, 3s), 1s);
  const pipeline::Decision next = fixture.redis({}, std::nullopt);
  EXPECT_EQ(next.outcome, pipeline::Outcome::allowed);  // the permit did not leak
  EXPECT_EQ(fixture.redis({}, std::nullopt).outcome, pipeline::Outcome::limited);
}

}  // namespace
}  // namespace sluice::store::redis
