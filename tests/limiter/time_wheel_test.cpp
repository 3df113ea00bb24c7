#include "limiter/time_wheel.hpp"

#include <gtest/gtest.h>

#include "tests/support/drive.hpp"
#include "tests/support/manual_clock.hpp"

namespace sluice::limiter {
namespace {

using namespace std::chrono_literals;
using test::admit_all;
using test::at;
using test::request;

TEST(TimeWheel, ClearsTheSlotsItPassesOver) {
  // 10 per 10 s in 10 one-second buckets: 5 in bucket 0, 5 in bucket 3.
  const TimeWheel wheel({.limit = 10, .window = 10s, .slots = 10});
  TimeWheel::State state;
  EXPECT_TRUE(request(wheel, state, at(500ms), 5).admitted);
  EXPECT_TRUE(request(wheel, state, at(3500ms), 5).admitted);
  EXPECT_FALSE(request(wheel, state, at(9999ms)).admitted);
  // At 10 s the wheel turns past bucket 0: its 5 permits leave the window.
  EXPECT_EQ(admit_all(wheel, state, at(10s)), 5);
  EXPECT_EQ(state.total, 10U);
  const Verdict refused = request(wheel, state, at(10s));
  EXPECT_FALSE(refused.admitted);
  EXPECT_EQ(refused.retry_after, 3s);  // bucket 3 leaves at 13 s
}

TEST(TimeWheel, ClearsEverythingAfterAFullTurn) {
  const TimeWheel wheel({.limit = 6, .window = 3s, .slots = 3});
  TimeWheel::State state;
  request(wheel, state, at(0s), 2);
  request(wheel, state, at(1s), 2);
  request(wheel, state, at(2s), 2);
  EXPECT_EQ(state.total, 6U);
  EXPECT_EQ(wheel.fresh_at(state, at(2s)), at(5s));
  EXPECT_TRUE(request(wheel, state, at(100s), 1).admitted);
  EXPECT_EQ(state.total, 1U);
  for (std::uint32_t slot = 0; slot < 3; ++slot) {
    EXPECT_EQ(state.buckets[slot], slot == 100 % 3 ? 1U : 0U);
  }
}

TEST(TimeWheel, StatusSumsTheLastSlots) {
  const TimeWheel wheel({.limit = 10, .window = 1min, .slots = 6});
  TimeWheel::State state;
  request(wheel, state, at(5s), 3);
  request(wheel, state, at(25s), 4);
  EXPECT_EQ(wheel.status(state, at(30s)).remaining, 3U);
  EXPECT_EQ(wheel.status(state, at(60s)).remaining, 6U);  // bucket 0 has left
  EXPECT_EQ(wheel.status(state, at(60s)).reset, 20s);     // bucket 2 leaves at 80 s
}

TEST(TimeWheel, DelayModeHoldsUntilEnoughBucketsLeave) {
  const TimeWheel wheel({.limit = 2, .window = 2s, .slots = 2});
  TimeWheel::State state;
  const Policy policy = test::delay(5s);
  request(wheel, state, at(0s));
  request(wheel, state, at(1200ms));
  EXPECT_EQ(request(wheel, state, at(1500ms), 1, policy).hold, 500ms);   // bucket 0 leaves at 2 s
  EXPECT_EQ(request(wheel, state, at(1500ms), 1, policy).hold, 1500ms);  // bucket 1 at 3 s
}

TEST(TimeWheel, RefusesAWindowThatIsNotAWholeNumberOfSlots) {
  try {
    TimeWheel({.limit = 1, .window = 1s, .slots = 3});
    FAIL() << "expected std::invalid_argument";
  } catch (const std::invalid_argument& error) {
    EXPECT_STREQ(error.what(), "window must be a whole number of slots, got window 1s for 3 slots");
  }
  EXPECT_THROW(TimeWheel({.limit = 1, .window = 1s, .slots = 0}), std::invalid_argument);
}

TEST(TimeWheel, ClockSteppingBackNeverOverAdmits) {
  test::expect_clock_step_back_is_safe(TimeWheel({.limit = 3, .window = 1s, .slots = 10}), at(5s),
                                       at(4s), 3);
}

}  // namespace
}  // namespace sluice::limiter
