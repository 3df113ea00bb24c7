// The memory store: a request's charges counted at once on the pipeline's own limiters (a
// manual clock), the same counts through the awaitable path, and permits given back.
#include "proxy/store/memory_store.hpp"

#include <gtest/gtest.h>

#include "tests/support/event_loop.hpp"
#include "tests/support/manual_clock.hpp"
#include "tests/support/pipeline_fixture.hpp"

namespace sluice::store {
namespace {

using namespace std::chrono_literals;
using Request = test::PipelineFixture::Request;
using test::at;

/// A pipeline from `yaml` and a memory store in front of its limiters.
class MemoryStoreFixture {
 public:
  explicit MemoryStoreFixture(const std::string& yaml) : pipeline_(yaml) {}

  /// The request's charges, prepared at `now`; fails the test if the pipeline decided alone.
  pipeline::Charges prepare(pipeline::Decision& decision, limiter::TimePoint now,
                            const Request& request = {}) {
    pipeline::Charges charges;
    EXPECT_TRUE(pipeline_.pipeline().prepare(test::PipelineFixture::view_of(request), now,
                                             std::nullopt, decision, charges));
    return charges;
  }

  /// charge_now(), which the memory store always answers, then conclude().
  pipeline::ChargeResult charge_now(pipeline::Decision& decision, limiter::TimePoint now,
                                    const Request& request = {}) {
    const pipeline::Charges charges = prepare(decision, now, request);
    pipeline::ChargeResult result;
    EXPECT_TRUE(store_.charge_now(0, decision, charges, now, result));
    pipeline_.pipeline().conclude(decision, charges, result, now);
    return result;
  }

  /// charge(), awaited on an event loop, then conclude().
  pipeline::ChargeResult charge(pipeline::Decision& decision, limiter::TimePoint now,
                                const Request& request = {}) {
    const pipeline::Charges charges = prepare(decision, now, request);
    pipeline::ChargeResult result;
    loop_.run([&]() -> io::Awaitable<void> {
      co_await store_.charge(1, decision, charges, now, result);
    });
    pipeline_.pipeline().conclude(decision, charges, result, now);
    return result;
  }

  MemoryStore& store() { return store_; }
  test::PipelineFixture& pipeline() { return pipeline_; }

 private:
  test::PipelineFixture pipeline_;
  MemoryStore store_;
  test::EventLoop loop_;
};

TEST(MemoryStore, CountsAtOnceOnThePipelinesLimiters) {
  MemoryStoreFixture fixture(R"(
upstream: http://127.0.0.1:9000
limiters:
  per-ip: {algorithm: fixed_window, limit: 3, window: 1m}
routes: [{name: all, limiters: [per-ip]}]
)");
  for (std::uint64_t left : {2U, 1U, 0U}) {
    pipeline::Decision decision;
    const pipeline::ChargeResult result = fixture.charge_now(decision, at(10s));
    EXPECT_EQ(result.counted, pipeline::Counted::yes);
    EXPECT_TRUE(result.live_admitted);
    EXPECT_EQ(result.store_permit, 0U);
    EXPECT_EQ(result.outcomes[0].status.remaining, left);
    EXPECT_EQ(decision.outcome, pipeline::Outcome::allowed);
  }
  pipeline::Decision refused;
  const pipeline::ChargeResult result = fixture.charge_now(refused, at(15s));
  EXPECT_FALSE(result.live_admitted);
  EXPECT_EQ(result.outcomes[0].verdict.retry_after, 45s);
  EXPECT_EQ(refused.outcome, pipeline::Outcome::limited);
  EXPECT_EQ(refused.status, 429U);
  // The pipeline's own decision counts in the same place.
  EXPECT_EQ(fixture.pipeline().send({}, at(16s)).outcome, pipeline::Outcome::limited);
  EXPECT_EQ(fixture.pipeline().send({.peer = "192.0.2.1"}, at(16s)).outcome,
            pipeline::Outcome::allowed);
}

TEST(MemoryStore, TheAwaitablePathCountsOnTheSameLimiters) {
  MemoryStoreFixture fixture(R"(
upstream: http://127.0.0.1:9000
limiters:
  bucket: {algorithm: token_bucket, rate: 1/m, burst: 4}
routes: [{name: all, limiters: [bucket]}]
)");
  for (std::uint64_t left : {3U, 2U, 1U, 0U}) {
    pipeline::Decision decision;
    const pipeline::ChargeResult result =
        left % 2 == 0 ? fixture.charge(decision, at(0s)) : fixture.charge_now(decision, at(0s));
    EXPECT_TRUE(result.live_admitted) << left;
    EXPECT_EQ(result.outcomes[0].status.remaining, left);
  }
  pipeline::Decision refused;
  EXPECT_FALSE(fixture.charge(refused, at(30s)).live_admitted);
  EXPECT_EQ(refused.retry_after, 30s);  // the next token, a minute after the burst
  pipeline::Decision refilled;
  EXPECT_TRUE(fixture.charge(refilled, at(1min)).live_admitted);
}

TEST(MemoryStore, ChargesShadowLimitersOnlyForRequestsThatPass) {
  MemoryStoreFixture fixture(R"(
upstream: http://127.0.0.1:9000
limiters:
  live: {algorithm: fixed_window, limit: 1, window: 1h}
  audit: {algorithm: fixed_window, limit: 5, window: 1h, shadow: true}
routes: [{name: all, limiters: [live, audit]}]
)");
  pipeline::Decision first;
  const pipeline::ChargeResult admitted = fixture.charge_now(first, at(0s));
  EXPECT_TRUE(admitted.live_admitted);
  EXPECT_TRUE(admitted.shadow_admitted);
  EXPECT_EQ(admitted.outcomes[1].status.remaining, 4U);
  pipeline::Decision second;
  const pipeline::ChargeResult refused = fixture.charge_now(second, at(1s));
  EXPECT_FALSE(refused.live_admitted);
  EXPECT_FALSE(refused.shadow_admitted);
  EXPECT_EQ(fixture.pipeline().pipeline().peek("audit", "198.51.100.7", at(1s))->remaining, 4U);
}

TEST(MemoryStore, ReleaseGivesBackTheConcurrencyPermits) {
  MemoryStoreFixture fixture(R"(
upstream: http://127.0.0.1:9000
limiters:
  inflight: {algorithm: concurrency, limit: 1}
routes: [{name: all, limiters: [inflight]}]
)");
  pipeline::Decision first;
  fixture.charge_now(first, at(0s));
  ASSERT_EQ(first.outcome, pipeline::Outcome::allowed);
  EXPECT_EQ(first.permit_count, 1U);
  EXPECT_EQ(first.store_permit, 0U);  // held by the memory limiter, not by a store
  pipeline::Decision second;
  fixture.charge_now(second, at(0s));
  EXPECT_EQ(second.outcome, pipeline::Outcome::limited);
  EXPECT_EQ(second.permit_count, 0U);
  fixture.store().release(0, first);
  EXPECT_EQ(fixture.pipeline().pipeline().peek("inflight", "198.51.100.7", at(0s))->remaining, 1U);
  pipeline::Decision third;
  fixture.charge_now(third, at(0s));
  EXPECT_EQ(third.outcome, pipeline::Outcome::allowed);
  fixture.store().release(0, third);
}

TEST(MemoryStore, HasNoHealthToReport) {
  const MemoryStore store;
  EXPECT_FALSE(store.health().has_value());
}

}  // namespace
}  // namespace sluice::store
