#include "limiter/leaky_bucket.hpp"

#include <gtest/gtest.h>

#include "tests/support/drive.hpp"
#include "tests/support/manual_clock.hpp"

namespace sluice::limiter {
namespace {

using namespace std::chrono_literals;
using test::admit_all;
using test::at;
using test::request;

const LeakyBucketOptions kNginx{.rate = {.permits = 10, .period = 1s}, .burst = 5};

TEST(LeakyBucket, AdmitsBurstPlusOneThenOnePerInterval) {
  // nginx: limit_req zone=... rate=10r/s; limit_req burst=5 nodelay;
  const LeakyBucket bucket(kNginx);
  LeakyBucket::State state;
  EXPECT_EQ(admit_all(bucket, state, at(0s)), 6);
  EXPECT_EQ(request(bucket, state, at(0s)).retry_after, 100ms);
  for (int tick = 1; tick <= 5; ++tick) {
    const TimePoint now = at(std::chrono::milliseconds(100 * tick));
    EXPECT_FALSE(request(bucket, state, now - 1ms).admitted) << tick;
    EXPECT_EQ(admit_all(bucket, state, now), 1) << tick;
  }
}

TEST(LeakyBucket, DelayModeSpacesTheBurstOutLikeNginxWithoutNodelay) {
  // nginx without nodelay: the burst is queued and served one per 100 ms.
  const LeakyBucket bucket(kNginx);
  LeakyBucket::State state;
  const Policy policy = test::delay(10s);
  for (int i = 0; i < 6; ++i) {
    const Verdict verdict = request(bucket, state, at(0s), 1, policy);
    ASSERT_TRUE(verdict.admitted) << i;
    EXPECT_EQ(verdict.hold, std::chrono::milliseconds(100 * i)) << i;
  }
  EXPECT_FALSE(request(bucket, state, at(0s), 1, policy).admitted);  // excess > burst: 503 in nginx
  EXPECT_EQ(request(bucket, state, at(250ms), 1, policy).hold, 350ms);
}

TEST(LeakyBucket, MaxDelayBoundsTheHold) {
  const LeakyBucket bucket(kNginx);
  LeakyBucket::State state;
  const Policy policy = test::delay(250ms);
  EXPECT_EQ(request(bucket, state, at(0s), 1, policy).hold, 0ms);
  EXPECT_EQ(request(bucket, state, at(0s), 1, policy).hold, 100ms);
  EXPECT_EQ(request(bucket, state, at(0s), 1, policy).hold, 200ms);
  const Verdict refused = request(bucket, state, at(0s), 1, policy);
  EXPECT_FALSE(refused.admitted);
  EXPECT_EQ(refused.retry_after, 50ms);
}

TEST(LeakyBucket, WithoutBurstAdmitsOnePerInterval) {
  const LeakyBucket bucket({.rate = {.permits = 2, .period = 1s}, .burst = 0});
  LeakyBucket::State state;
  EXPECT_EQ(admit_all(bucket, state, at(0s)), 1);
  EXPECT_EQ(admit_all(bucket, state, at(499ms)), 0);
  EXPECT_EQ(admit_all(bucket, state, at(500ms)), 1);
}

TEST(LeakyBucket, CountsCostAgainstTheBucket) {
  const LeakyBucket bucket(kNginx);
  LeakyBucket::State state;
  EXPECT_TRUE(request(bucket, state, at(0s), 4).admitted);
  EXPECT_FALSE(request(bucket, state, at(0s), 3).admitted);
  EXPECT_EQ(request(bucket, state, at(0s), 3).retry_after, 100ms);
  EXPECT_TRUE(request(bucket, state, at(0s), 2).admitted);
  EXPECT_EQ(bucket.max_cost(), 6U);
  EXPECT_EQ(request(bucket, state, at(1h), 7).retry_after, Duration::max());
}

TEST(LeakyBucket, StatusGivesRoomAndTimeToEmpty) {
  const LeakyBucket bucket(kNginx);
  LeakyBucket::State state;
  request(bucket, state, at(0s), 4);
  EXPECT_EQ(bucket.status(state, at(150ms)).remaining, 3U);  // 6 − 2.5 = 3.5
  EXPECT_EQ(bucket.status(state, at(150ms)).reset, 250ms);
  EXPECT_EQ(bucket.fresh_at(state, at(0s)), at(400ms));
}

TEST(LeakyBucket, ClockSteppingBackLeaksNothing) {
  test::expect_clock_step_back_is_safe(LeakyBucket(kNginx), at(10s), at(9s), 6);
}

TEST(LeakyBucket, RefusesInvalidParameters) {
  EXPECT_THROW(LeakyBucket({.rate = {.permits = 0, .period = 1s}}), std::invalid_argument);
  EXPECT_THROW(LeakyBucket({.rate = {.permits = 1, .period = 1s}, .burst = -1}),
               std::invalid_argument);
}

}  // namespace
}  // namespace sluice::limiter
