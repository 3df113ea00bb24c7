// Limiter time: epoch-aligned periods by floor division, 32-bit period indexes unwrapped,
// additions that saturate instead of overflowing, and nanoseconds rounded up.
#include "limiter/time.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>

namespace sluice::limiter {
namespace {

using namespace std::chrono_literals;

TimePoint t(Duration since_epoch) { return TimePoint(since_epoch); }

TEST(PeriodIndex, IsFloorDivisionOnBothSidesOfTheEpoch) {
  EXPECT_EQ(period_index(t(0ns), 1s), 0);
  EXPECT_EQ(period_index(t(999'999'999ns), 1s), 0);
  EXPECT_EQ(period_index(t(1s), 1s), 1);
  EXPECT_EQ(period_index(t(125s), 1min), 2);
  EXPECT_EQ(period_index(t(-1ns), 1s), -1);  // not 0: truncation would round towards zero
  EXPECT_EQ(period_index(t(-1s), 1s), -1);
  EXPECT_EQ(period_index(t(-1s - 1ns), 1s), -2);
}

TEST(PeriodStart, StartsThePeriodOfAnIndexAndSaturates) {
  EXPECT_EQ(period_start(3, 1s), t(3s));
  EXPECT_EQ(period_start(-2, 250ms), t(-500ms));
  EXPECT_EQ(period_start(period_index(t(125s), 1min), 1min), t(120s));
  EXPECT_EQ(period_start(std::numeric_limits<std::int64_t>::max(), 1s), kNever);
  EXPECT_EQ(period_start(std::numeric_limits<std::int64_t>::min(), 1s), kAlways);
}

TEST(UnwrapPeriod, FindsTheIndexNearestToAKnownOne) {
  EXPECT_EQ(unwrap_period(12, 10), 12);
  EXPECT_EQ(unwrap_period(5, 10), 5);
  constexpr std::int64_t k2To32 = std::int64_t{1} << 32;
  // Across the wrap of 32 bits, both ways.
  EXPECT_EQ(unwrap_period(static_cast<std::uint32_t>(k2To32 - 2), k2To32 + 3), k2To32 - 2);
  EXPECT_EQ(unwrap_period(static_cast<std::uint32_t>(k2To32 + 3), k2To32 - 2), k2To32 + 3);
  // Before the epoch.
  EXPECT_EQ(unwrap_period(static_cast<std::uint32_t>(-3), -1), -3);
  // A day of one-second windows after a much later index.
  constexpr std::int64_t kNow = 1'700'000'000;
  EXPECT_EQ(unwrap_period(static_cast<std::uint32_t>(kNow - 86'400), kNow), kNow - 86'400);
}

TEST(SaturatingAdd, StopsAtNever) {
  EXPECT_EQ(saturating_add(t(1s), 500ms), t(1500ms));
  EXPECT_EQ(saturating_add(kNever, 1ns), kNever);
  EXPECT_EQ(saturating_add(t(1s), Duration::max()), kNever);
  EXPECT_EQ(saturating_add(kNever - 2s, 1s), kNever - 1s);
  EXPECT_EQ(saturating_add(kNever - 1s, 1s), kNever);  // exactly at the end
  EXPECT_EQ(saturating_add(kNever - 1s, 1s + 1ns), kNever);
}

TEST(CeilNanoseconds, RoundsUpButForgivesFloatNoise) {
  EXPECT_EQ(ceil_nanoseconds(1.0), 1ns);
  EXPECT_EQ(ceil_nanoseconds(1.2), 2ns);
  EXPECT_EQ(ceil_nanoseconds(1e8), 100ms);
  EXPECT_EQ(ceil_nanoseconds(1.0000000000000002 * 1e8), 100ms);  // the float image of 100 ms
  EXPECT_EQ(ceil_nanoseconds(1e8 + 0.5), 100'000'001ns);
  EXPECT_EQ(ceil_nanoseconds(0.0), 0ns);
  EXPECT_EQ(ceil_nanoseconds(-5.0), 0ns);
  EXPECT_EQ(ceil_nanoseconds(std::nan("")), 0ns);
  EXPECT_EQ(ceil_nanoseconds(1e30), Duration::max());
  EXPECT_EQ(ceil_nanoseconds(std::numeric_limits<double>::infinity()), Duration::max());
}

}  // namespace
}  // namespace sluice::limiter
