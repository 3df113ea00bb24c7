#include "limiter/token_bucket.hpp"

#include <gtest/gtest.h>

#include "tests/support/drive.hpp"
#include "tests/support/manual_clock.hpp"

namespace sluice::limiter {
namespace {

using namespace std::chrono_literals;
using test::admit_all;
using test::at;
using test::request;

constexpr Rate per_second(double permits) { return {.permits = permits, .period = 1s}; }

TEST(TokenBucket, StartsFullAndRefillsAtTheRate) {
  const TokenBucket bucket({.rate = per_second(10), .burst = 5});
  TokenBucket::State state;
  EXPECT_EQ(admit_all(bucket, state, at(0s)), 5);
  const Verdict refused = request(bucket, state, at(0s));
  EXPECT_FALSE(refused.admitted);
  EXPECT_EQ(refused.retry_after, 100ms);
  EXPECT_FALSE(request(bucket, state, at(100ms) - 1ns).admitted);
  EXPECT_EQ(admit_all(bucket, state, at(100ms)), 1);
  EXPECT_EQ(admit_all(bucket, state, at(350ms)), 2);  // 2.5 tokens: two whole ones
  EXPECT_EQ(admit_all(bucket, state, at(10s)), 5);    // never more than burst
}

TEST(TokenBucket, RefillsExactlyAtFractionalRates) {
  // 100/min: one token every 600 ms, computed from nanoseconds without rounding a hair short.
  const TokenBucket bucket({.rate = {.permits = 100, .period = 1min}, .burst = 1});
  TokenBucket::State state;
  ASSERT_TRUE(request(bucket, state, at(0s)).admitted);
  for (int step = 1; step < 10; ++step) {
    EXPECT_FALSE(request(bucket, state, at(std::chrono::milliseconds(60 * step))).admitted);
  }
  EXPECT_TRUE(request(bucket, state, at(600ms)).admitted);
}

TEST(TokenBucket, CountsCostInTokens) {
  const TokenBucket bucket({.rate = per_second(10), .burst = 5});
  TokenBucket::State state;
  EXPECT_TRUE(request(bucket, state, at(0s), 3).admitted);
  const Verdict refused = request(bucket, state, at(0s), 3);
  EXPECT_FALSE(refused.admitted);
  EXPECT_EQ(refused.retry_after, 100ms);  // one token short
  EXPECT_TRUE(request(bucket, state, at(0s), 2).admitted);
  EXPECT_EQ(request(bucket, state, at(0s), 6).retry_after, Duration::max());
  EXPECT_EQ(bucket.max_cost(), 5U);
}

TEST(TokenBucket, DelayModeGoesNegativeAndHolds) {
  const TokenBucket bucket({.rate = per_second(10), .burst = 1});
  TokenBucket::State state;
  const Policy policy = test::delay(250ms);
  EXPECT_EQ(request(bucket, state, at(0s), 1, policy).hold, 0ms);
  EXPECT_EQ(request(bucket, state, at(0s), 1, policy).hold, 100ms);
  EXPECT_EQ(request(bucket, state, at(0s), 1, policy).hold, 200ms);
  const Verdict refused = request(bucket, state, at(0s), 1, policy);
  EXPECT_FALSE(refused.admitted);  // 300 ms > max_delay
  EXPECT_EQ(refused.retry_after, 50ms);
  EXPECT_EQ(request(bucket, state, at(150ms), 1, policy).hold, 150ms);
  // Cost above burst: (cost − tokens)/rate = (3 − 0)/10 once the debt has just cleared.
  EXPECT_EQ(request(bucket, state, at(300ms), 3, test::delay(1s)).hold, 300ms);
}

TEST(TokenBucket, StatusGivesWholeTokensAndTimeToFull) {
  const TokenBucket bucket({.rate = per_second(10), .burst = 5});
  TokenBucket::State state;
  request(bucket, state, at(0s), 4);
  Status status = bucket.status(state, at(50ms));
  EXPECT_EQ(status.remaining, 1U);  // 1.5 tokens
  EXPECT_EQ(status.reset, 350ms);
  EXPECT_EQ(bucket.fresh_at(state, at(0s)), at(400ms));
  status = bucket.status(state, at(1s));
  EXPECT_EQ(status.remaining, 5U);
  EXPECT_EQ(status.reset, 0ns);
}

TEST(TokenBucket, ClockSteppingBackRefillsNothing) {
  const TokenBucket bucket({.rate = per_second(1), .burst = 2});
  TokenBucket::State state;
  EXPECT_EQ(admit_all(bucket, state, at(10s)), 2);
  EXPECT_EQ(admit_all(bucket, state, at(5s)), 0);
  EXPECT_EQ(admit_all(bucket, state, at(10s)), 0);
  EXPECT_EQ(admit_all(bucket, state, at(11s)), 1);
  EXPECT_EQ(admit_all(bucket, state, at(1h)), 2);
}

TEST(TokenBucket, HandlesHugeRatesAndBursts) {
  const TokenBucket bucket({.rate = per_second(1e12), .burst = 4e9});
  TokenBucket::State state;
  EXPECT_TRUE(request(bucket, state, at(0s), 4'000'000'000U).admitted);
  EXPECT_FALSE(request(bucket, state, at(0s), 1'000).admitted);
  EXPECT_TRUE(request(bucket, state, at(1ns), 1'000).admitted);  // 1000 tokens per ns
}

TEST(TokenBucket, RefusesInvalidParameters) {
  EXPECT_THROW(TokenBucket({.rate = per_second(0), .burst = 1}), std::invalid_argument);
  EXPECT_THROW(TokenBucket({.rate = per_second(-1), .burst = 1}), std::invalid_argument);
  EXPECT_THROW(TokenBucket({.rate = per_second(1), .burst = 0.5}), std::invalid_argument);
  EXPECT_THROW(TokenBucket({.rate = {.permits = 1, .period = 0s}, .burst = 1}),
               std::invalid_argument);
}

}  // namespace
}  // namespace sluice::limiter
