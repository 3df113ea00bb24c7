#include "limiter/warming_bucket.hpp"

#include <gtest/gtest.h>

#include <vector>

#include "tests/support/drive.hpp"
#include "tests/support/manual_clock.hpp"

namespace sluice::limiter {
namespace {

using namespace std::chrono_literals;
using test::at;
using test::request;

const WarmingBucketOptions kGuava{
    .rate = {.permits = 2, .period = 1s}, .warmup = 4s, .cold_factor = 3};

TEST(WarmingBucket, DerivesGuavasTrapezoid) {
  const WarmingBucket bucket(kGuava);
  EXPECT_DOUBLE_EQ(bucket.threshold_permits(), 4.0);  // 0.5 · 4 s / 0.5 s
  EXPECT_DOUBLE_EQ(bucket.max_permits(), 8.0);        // 4 + 2 · 4 s / (0.5 s + 1.5 s)
}

TEST(WarmingBucket, WaitsLikeGuavaForBackToBackRequestsOnAColdKey) {
  // Guava: RateLimiter.create(2.0, 4, SECONDS) then acquire() eight times in a row.
  const WarmingBucket bucket(kGuava);
  auto state = bucket.fresh_state(at(0s));
  const std::vector<Duration> expected{0ms, 1375ms, 1125ms, 875ms, 625ms, 500ms, 500ms, 500ms};
  TimePoint now = at(0s);
  for (std::size_t i = 0; i < expected.size(); ++i) {
    const Verdict verdict = request(bucket, state, now, 1, test::delay(10s));
    ASSERT_TRUE(verdict.admitted) << "request " << i;
    EXPECT_EQ(verdict.hold, expected[i]) << "request " << i;
    now += verdict.hold;  // the caller sleeps, then asks again
  }
}

TEST(WarmingBucket, RejectModeAdmitsOnlyWhenTheWaitIsZero) {
  const WarmingBucket bucket(kGuava);
  auto state = bucket.fresh_state(at(0s));
  EXPECT_TRUE(request(bucket, state, at(0s)).admitted);
  const Verdict refused = request(bucket, state, at(1s));
  EXPECT_FALSE(refused.admitted);
  EXPECT_EQ(refused.retry_after, 375ms);
  EXPECT_TRUE(request(bucket, state, at(1375ms)).admitted);
  EXPECT_FALSE(request(bucket, state, at(2499ms)).admitted);
  EXPECT_TRUE(request(bucket, state, at(2500ms)).admitted);
}

TEST(WarmingBucket, PaysLaterForALargeCost) {
  // Fresh permits beyond the stored ones cost the stable interval each, paid by the next request.
  const WarmingBucket bucket(kGuava);
  auto state = bucket.fresh_state(at(0s));
  EXPECT_TRUE(request(bucket, state, at(0s), 10).admitted);
  // 8 stored: 4 above threshold (trapezoid 1.5 → 0.5 s: 4 s) + 4 at 0.5 s (2 s); 2 fresh (1 s).
  EXPECT_EQ(state.next_free, at(7s));
  EXPECT_FALSE(request(bucket, state, at(6999ms)).admitted);
  EXPECT_TRUE(request(bucket, state, at(7s)).admitted);
}

TEST(WarmingBucket, CoolsDownToColdWhenIdle) {
  const WarmingBucket bucket(kGuava);
  auto state = bucket.fresh_state(at(0s));
  TimePoint now = at(0s);
  for (int i = 0; i < 20; ++i) {  // warm it up completely
    const Verdict verdict = request(bucket, state, now, 1, test::delay(10s));
    now += verdict.hold;
  }
  EXPECT_NEAR(state.stored, 0.0, 1e-9);
  // Idle refills maxPermits over the warmup period: 4 s back to fully cold.
  const TimePoint cold = bucket.fresh_at(state, at(0s));
  EXPECT_EQ(cold, state.next_free + 4s);
  EXPECT_TRUE(request(bucket, state, cold).admitted);
  EXPECT_EQ(state.next_free, cold + 1375ms);
}

TEST(WarmingBucket, ClockSteppingBackNeverShortensAWait) {
  const WarmingBucket bucket(kGuava);
  auto state = bucket.fresh_state(at(10s));
  EXPECT_TRUE(request(bucket, state, at(10s)).admitted);
  EXPECT_FALSE(request(bucket, state, at(5s)).admitted);
  EXPECT_EQ(request(bucket, state, at(5s)).retry_after, 6375ms);
}

TEST(WarmingBucket, RefusesInvalidParameters) {
  EXPECT_THROW(WarmingBucket({.rate = {.permits = 2, .period = 1s}, .warmup = 0s}),
               std::invalid_argument);
  EXPECT_THROW(
      WarmingBucket({.rate = {.permits = 2, .period = 1s}, .warmup = 1s, .cold_factor = 0.5}),
      std::invalid_argument);
}

}  // namespace
}  // namespace sluice::limiter
