// The circuit breaker in front of a failing store: the first failure opens it, then one probe
// per interval is let through, and a success closes it. Times are given, not read.
#include "proxy/store/redis/circuit_breaker.hpp"

#include <gtest/gtest.h>

namespace sluice::store::redis {
namespace {

using namespace std::chrono_literals;
using Clock = CircuitBreaker::Clock;

Clock::time_point at(Clock::duration offset) { return Clock::time_point(1h + offset); }

TEST(CircuitBreaker, LetsEveryRequestThroughWhileClosed) {
  CircuitBreaker breaker(1s);
  EXPECT_FALSE(breaker.is_open());
  for (int i = 0; i < 3; ++i) {
    EXPECT_TRUE(breaker.allow(at(0s)));
  }
  EXPECT_FALSE(breaker.succeeded());  // nothing to close
  EXPECT_FALSE(breaker.is_open());
}

TEST(CircuitBreaker, TheFirstFailureOpensItAndIsTheOnlyOneToSaySo) {
  CircuitBreaker breaker(1s);
  EXPECT_TRUE(breaker.failed(at(0s)));
  EXPECT_TRUE(breaker.is_open());
  EXPECT_FALSE(breaker.failed(at(10ms)));  // already open: nothing to log
  EXPECT_TRUE(breaker.is_open());
}

TEST(CircuitBreaker, LetsOneProbeThroughPerInterval) {
  CircuitBreaker breaker(1s);
  breaker.failed(at(0s));
  EXPECT_FALSE(breaker.allow(at(0s)));
  EXPECT_FALSE(breaker.allow(at(1s) - 1ns));
  EXPECT_TRUE(breaker.allow(at(1s)));   // the probe
  EXPECT_FALSE(breaker.allow(at(1s)));  // only one
  EXPECT_FALSE(breaker.allow(at(2s) - 1ns));
  EXPECT_TRUE(breaker.allow(at(2s) + 500ms));  // the next interval's probe (the last one hung)
  EXPECT_FALSE(breaker.allow(at(3s)));         // a probe's interval runs from when it went
  EXPECT_TRUE(breaker.allow(at(3s) + 500ms));
}

TEST(CircuitBreaker, AFailedProbeWaitsAnotherIntervalFromItsFailure) {
  CircuitBreaker breaker(1s);
  breaker.failed(at(0s));
  EXPECT_TRUE(breaker.allow(at(1s)));
  EXPECT_FALSE(breaker.failed(at(1s) + 300ms));
  EXPECT_FALSE(breaker.allow(at(2s)));
  EXPECT_TRUE(breaker.allow(at(2s) + 300ms));
}

TEST(CircuitBreaker, ASuccessfulProbeClosesItOnce) {
  CircuitBreaker breaker(1s);
  breaker.failed(at(0s));
  ASSERT_TRUE(breaker.allow(at(1s)));
  EXPECT_TRUE(breaker.succeeded());
  EXPECT_FALSE(breaker.is_open());
  EXPECT_FALSE(breaker.succeeded());  // closed already: nothing to log
  EXPECT_TRUE(breaker.allow(at(1s)));
  EXPECT_TRUE(breaker.allow(at(1s)));
  // Failing again opens it again, with a fresh interval.
  EXPECT_TRUE(breaker.failed(at(5s)));
  EXPECT_FALSE(breaker.allow(at(5s) + 999ms));
  EXPECT_TRUE(breaker.allow(at(6s)));
}

}  // namespace
}  // namespace sluice::store::redis
