// The system clock the limiters read: the wall clock's time since the epoch (windows align to
// it), advanced by the steady clock (it never steps back).
#include "limiter/clock.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <thread>

namespace sluice::limiter {
namespace {

using namespace std::chrono_literals;

TEST(SystemClock, TellsTheWallClocksTime) {
  const SystemClock clock;
  const auto wall = std::chrono::time_point_cast<Duration>(std::chrono::system_clock::now());
  const TimePoint now = clock.now();
  const Duration apart = now > wall ? now - wall : wall - now;
  EXPECT_LT(apart, 100ms) << "clock " << now.time_since_epoch().count() << " ns, wall "
                          << wall.time_since_epoch().count() << " ns";
}

TEST(SystemClock, NeverStepsBack) {
  const SystemClock clock;
  TimePoint last = clock.now();
  for (int i = 0; i < 100'000; ++i) {
    const TimePoint now = clock.now();
    ASSERT_GE(now, last) << "reading " << i;
    last = now;
  }
  // It moves: a millisecond of sleep shows.
  const TimePoint before = clock.now();
  std::this_thread::sleep_for(1ms);
  EXPECT_GE(clock.now() - before, 1ms);
}

}  // namespace
}  // namespace sluice::limiter
