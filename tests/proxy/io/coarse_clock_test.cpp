// The coarse clock: steady_clock's own time, only less fresh, and never stepping back.
#include "proxy/io/coarse_clock.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <thread>

namespace sluice::io {
namespace {

using namespace std::chrono_literals;

TEST(CoarseClock, ReadsTheSteadyClockWithinAFewTicks) {
  const auto coarse = CoarseClock::now();
  const auto steady = std::chrono::steady_clock::now();
  // Behind by at most the kernel's last timekeeping update; never ahead.
  EXPECT_LE(coarse, steady);
  EXPECT_LT(steady - coarse, 100ms);
}

TEST(CoarseClock, NeverStepsBackAndMoves) {
  auto last = CoarseClock::now();
  for (int i = 0; i < 100'000; ++i) {
    const auto now = CoarseClock::now();
    ASSERT_GE(now, last) << "reading " << i;
    last = now;
  }
  const auto before = CoarseClock::now();
  std::this_thread::sleep_for(50ms);
  EXPECT_GE(CoarseClock::now() - before, 30ms);
}

}  // namespace
}  // namespace sluice::io
