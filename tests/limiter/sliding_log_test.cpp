#include "limiter/sliding_log.hpp"

#include <gtest/gtest.h>

#include "tests/support/drive.hpp"
#include "tests/support/manual_clock.hpp"

namespace sluice::limiter {
namespace {

using namespace std::chrono_literals;
using test::admit_all;
using test::at;
using test::request;

TEST(SlidingLog, AdmitsExactlyTheLimitInAnyWindow) {
  // Seed 000's limiter: 2 per 2 s.
  const SlidingLog log({.limit = 2, .window = 2s});
  SlidingLog::State state;
  EXPECT_TRUE(request(log, state, at(0s)).admitted);
  EXPECT_TRUE(request(log, state, at(500ms)).admitted);
  const Verdict refused = request(log, state, at(1s));
  EXPECT_FALSE(refused.admitted);
  EXPECT_EQ(refused.retry_after, 1s);  // the request at 0 s leaves the window at 2 s
  EXPECT_FALSE(request(log, state, at(2s) - 1ns).admitted);
  EXPECT_TRUE(request(log, state, at(2s)).admitted);  // (0, 2]: the one at 0 no longer counts
  const Verdict next = request(log, state, at(2400ms));
  EXPECT_FALSE(next.admitted);
  EXPECT_EQ(next.retry_after, 100ms);
}

TEST(SlidingLog, CountsOneTimestampPerPermit) {
  const SlidingLog log({.limit = 5, .window = 10s});
  SlidingLog::State state;
  EXPECT_TRUE(request(log, state, at(0s), 3).admitted);
  const Verdict refused = request(log, state, at(1s), 3);
  EXPECT_FALSE(refused.admitted);
  EXPECT_EQ(refused.retry_after, 9s);
  EXPECT_TRUE(request(log, state, at(1s), 2).admitted);
  EXPECT_EQ(state.size, 5U);
  EXPECT_FALSE(request(log, state, at(1s), 6).admitted);
  EXPECT_EQ(request(log, state, at(1s), 6).retry_after, Duration::max());
}

TEST(SlidingLog, StatusCountsTheWindowEndingNow) {
  const SlidingLog log({.limit = 4, .window = 10s});
  SlidingLog::State state;
  request(log, state, at(0s));
  request(log, state, at(3s), 2);
  EXPECT_EQ(log.status(state, at(5s)).remaining, 1U);
  EXPECT_EQ(log.status(state, at(5s)).reset, 8s);
  EXPECT_EQ(log.status(state, at(10s)).remaining, 2U);
  EXPECT_EQ(log.fresh_at(state, at(5s)), at(13s));
}

TEST(SlidingLog, DelayModeLogsReservationsWhenTheyWillPass) {
  const SlidingLog log({.limit = 2, .window = 1s});
  SlidingLog::State state;
  const Policy policy = test::delay(5s);
  EXPECT_EQ(request(log, state, at(0s), 1, policy).hold, 0s);
  EXPECT_EQ(request(log, state, at(100ms), 1, policy).hold, 0s);
  EXPECT_EQ(request(log, state, at(200ms), 1, policy).hold, 800ms);   // at 1.0 s
  EXPECT_EQ(request(log, state, at(200ms), 1, policy).hold, 900ms);   // at 1.1 s
  EXPECT_EQ(request(log, state, at(200ms), 1, policy).hold, 1800ms);  // at 2.0 s
  EXPECT_LE(state.size, 2U);
  EXPECT_LE(state.capacity, 2U);
}

TEST(SlidingLog, NeverHoldsMoreThanLimitTimestamps) {
  const SlidingLog log({.limit = 100, .window = 1s});
  SlidingLog::State state;
  for (int i = 0; i < 10'000; ++i) {
    request(log, state, at(std::chrono::milliseconds(i * 3)));
  }
  EXPECT_LE(state.capacity, 100U);
  EXPECT_EQ(admit_all(log, state, at(31s)), 100);
}

TEST(SlidingLog, ClockSteppingBackNeverOverAdmits) {
  test::expect_clock_step_back_is_safe(SlidingLog({.limit = 3, .window = 1s}), at(5s), at(3s), 3);
}

}  // namespace
}  // namespace sluice::limiter
