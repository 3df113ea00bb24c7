#include "limiter/fixed_window.hpp"

#include <gtest/gtest.h>

#include <limits>
#include <random>

#include "limiter/periods.hpp"
#include "tests/support/drive.hpp"
#include "tests/support/manual_clock.hpp"

namespace sluice::limiter {
namespace {

using namespace std::chrono_literals;
using test::admit_all;
using test::at;
using test::request;

TEST(FixedWindow, AdmitsUpToTheLimitThenReportsTheWindowEnd) {
  const FixedWindow fixed({.limit = 10, .window = 1min});
  FixedWindow::State state;
  EXPECT_EQ(admit_all(fixed, state, at(30s)), 10);
  const Verdict refused = request(fixed, state, at(30s));
  EXPECT_FALSE(refused.admitted);
  EXPECT_EQ(refused.retry_after, 30s);
  EXPECT_TRUE(request(fixed, state, at(60s)).admitted);
}

TEST(FixedWindow, LetsTwiceTheLimitThroughAcrossAWindowEdge) {
  // Seed 001: 9 requests at 0:59 and 10 more at 1:01 all pass a 10-per-minute limit.
  const FixedWindow fixed({.limit = 10, .window = 1min});
  FixedWindow::State state;
  for (int i = 0; i < 9; ++i) {
    ASSERT_TRUE(request(fixed, state, at(59s)).admitted);
  }
  EXPECT_EQ(admit_all(fixed, state, at(61s)), 10);
}

TEST(FixedWindow, WindowsAreAlignedToTheEpoch) {
  const FixedWindow fixed({.limit = 1, .window = 1min});
  FixedWindow::State state;
  ASSERT_TRUE(request(fixed, state, at(60s) - 1ns).admitted);
  EXPECT_FALSE(request(fixed, state, at(60s) - 1ns).admitted);
  EXPECT_TRUE(request(fixed, state, at(60s)).admitted);
}

TEST(FixedWindow, CountsCostInPermits) {
  const FixedWindow fixed({.limit = 10, .window = 1s});
  FixedWindow::State state;
  EXPECT_TRUE(request(fixed, state, at(0s), 4).admitted);
  EXPECT_TRUE(request(fixed, state, at(0s), 4).admitted);
  EXPECT_FALSE(request(fixed, state, at(0s), 4).admitted);
  EXPECT_TRUE(request(fixed, state, at(0s), 2).admitted);
  EXPECT_EQ(fixed.status(state, at(0s)).remaining, 0U);
}

TEST(FixedWindow, NeverAdmitsACostAboveTheLimit) {
  const FixedWindow fixed({.limit = 10, .window = 1s});
  FixedWindow::State state;
  const Verdict verdict = request(fixed, state, at(0s), 11);
  EXPECT_FALSE(verdict.admitted);
  EXPECT_EQ(verdict.retry_after, Duration::max());
  EXPECT_EQ(fixed.max_cost(), 10U);
}

TEST(FixedWindow, StatusGivesRemainingAndTimeToTheNextWindow) {
  const FixedWindow fixed({.limit = 10, .window = 1min});
  FixedWindow::State state;
  EXPECT_EQ(fixed.status(state, at(42s)).remaining, 10U);
  request(fixed, state, at(42s), 3);
  const Status status = fixed.status(state, at(42s));
  EXPECT_EQ(status.remaining, 7U);
  EXPECT_EQ(status.reset, 18s);
  EXPECT_EQ(fixed.fresh_at(state, at(42s)), at(60s));
}

TEST(FixedWindow, DelayModeHoldsUntilTheFirstWindowWithRoom) {
  const FixedWindow fixed({.limit = 2, .window = 1s});
  FixedWindow::State state;
  const Policy policy = test::delay(2s);
  EXPECT_EQ(request(fixed, state, at(250ms), 1, policy).hold, 0ns);
  EXPECT_EQ(request(fixed, state, at(250ms), 1, policy).hold, 0ns);
  EXPECT_EQ(request(fixed, state, at(250ms), 1, policy).hold, 750ms);
  EXPECT_EQ(request(fixed, state, at(250ms), 1, policy).hold, 750ms);
  EXPECT_EQ(request(fixed, state, at(250ms), 1, policy).hold, 1750ms);
  EXPECT_EQ(request(fixed, state, at(250ms), 1, policy).hold, 1750ms);
  const Verdict too_far = request(fixed, state, at(250ms), 1, policy);
  EXPECT_FALSE(too_far.admitted);  // 2.75 s > max_delay
  EXPECT_EQ(too_far.retry_after, 750ms);
  // Arrival order: a later request is not admitted before the held ones.
  EXPECT_EQ(request(fixed, state, at(1100ms), 1, policy).hold, 1900ms);
}

TEST(FixedWindow, ClockSteppingBackNeverOverAdmits) {
  const FixedWindow fixed({.limit = 3, .window = 1s});
  FixedWindow::State state;
  EXPECT_EQ(admit_all(fixed, state, at(10500ms)), 3);
  EXPECT_EQ(admit_all(fixed, state, at(9500ms)), 0);  // the window it left is not reopened
  EXPECT_EQ(admit_all(fixed, state, at(10999ms)), 0);
  EXPECT_EQ(admit_all(fixed, state, at(1h)), 3);  // a jump forward finds a fresh window
}

TEST(FixedWindow, HandlesTheLargestLimit) {
  constexpr Permits kMax = std::numeric_limits<Permits>::max();
  const FixedWindow fixed({.limit = kMax, .window = 1s});
  FixedWindow::State state;
  EXPECT_TRUE(request(fixed, state, at(0s), kMax - 1).admitted);
  EXPECT_TRUE(request(fixed, state, at(0s), 1).admitted);
  EXPECT_FALSE(request(fixed, state, at(0s), 1).admitted);
  EXPECT_FALSE(request(fixed, state, at(0s), kMax).admitted);
  EXPECT_EQ(fixed.status(state, at(0s)).remaining, 0U);
  EXPECT_TRUE(request(fixed, state, at(1s), kMax).admitted);
}

TEST(FixedWindow, RefusesInvalidParameters) {
  EXPECT_THROW(FixedWindow({.limit = 0, .window = 1s}), std::invalid_argument);
  EXPECT_THROW(FixedWindow({.limit = 1, .window = 0s}), std::invalid_argument);
  EXPECT_THROW(FixedWindow({.limit = 1, .window = -1s}), std::invalid_argument);
}

TEST(Periods, IndexesExactlyAsFloorDivision) {
  std::mt19937_64 random(7);
  for (const Duration length : {Duration(1), Duration(3), Duration(1000), Duration(250ms),
                                Duration(1s), Duration(1min), Duration(std::chrono::days(1))}) {
    const Periods periods(length);
    for (int i = 0; i < 100'000; ++i) {
      const auto ns = static_cast<std::int64_t>(random() >> 1) - (i % 2 == 0 ? 0 : (1LL << 62));
      const TimePoint t{Duration(ns)};
      ASSERT_EQ(periods.index(t), period_index(t, length)) << ns << " / " << length.count();
    }
    // Exactly on and just around period boundaries.
    for (std::int64_t index = -3; index < 3; ++index) {
      const TimePoint start = test::at(0s) + index * length;
      ASSERT_EQ(periods.index(start), period_index(start, length));
      ASSERT_EQ(periods.index(start - 1ns), period_index(start - 1ns, length));
    }
  }
}

}  // namespace
}  // namespace sluice::limiter
