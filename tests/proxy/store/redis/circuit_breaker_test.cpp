// The circuit breaker in front of a failing store: the first failure opens it, then one probe
// per interval is let through, and a success of a call begun after the last failure closes it.
// Times are given, not read.
#include "proxy/store/redis/circuit_breaker.hpp"

#include <gtest/gtest.h>

#include <cstdint>

namespace sluice::store::redis {
namespace {

using namespace std::chrono_literals;
using Clock = CircuitBreaker::Clock;

Clock::time_point steady_at(Clock::duration offset) { return Clock::time_point(1h + offset); }

TEST(CircuitBreaker, LetsEveryRequestThroughWhileClosed) {
  CircuitBreaker breaker(1s);
  EXPECT_FALSE(breaker.is_open());
  for (int i = 0; i < 3; ++i) {
    EXPECT_TRUE(breaker.allow(steady_at(0s)));
  }
  EXPECT_FALSE(breaker.succeeded(breaker.ticket()));  // nothing to close
  EXPECT_FALSE(breaker.is_open());
}

TEST(CircuitBreaker, TheFirstFailureOpensItAndIsTheOnlyOneToSaySo) {
  CircuitBreaker breaker(1s);
  EXPECT_TRUE(breaker.failed(steady_at(0s)));
  EXPECT_TRUE(breaker.is_open());
  EXPECT_FALSE(breaker.failed(steady_at(10ms)));  // already open: nothing to log
  EXPECT_TRUE(breaker.is_open());
}

TEST(CircuitBreaker, LetsOneProbeThroughPerInterval) {
  CircuitBreaker breaker(1s);
  breaker.failed(steady_at(0s));
  EXPECT_FALSE(breaker.allow(steady_at(0s)));
  EXPECT_FALSE(breaker.allow(steady_at(1s) - 1ns));
  EXPECT_TRUE(breaker.allow(steady_at(1s)));   // the probe
  EXPECT_FALSE(breaker.allow(steady_at(1s)));  // only one
  EXPECT_FALSE(breaker.allow(steady_at(2s) - 1ns));
  EXPECT_TRUE(
      breaker.allow(steady_at(2s) + 500ms));   // the next interval's probe (the last one hung)
  EXPECT_FALSE(breaker.allow(steady_at(3s)));  // a probe's interval runs from when it went
  EXPECT_TRUE(breaker.allow(steady_at(3s) + 500ms));
}

TEST(CircuitBreaker, AFailedProbeWaitsAnotherIntervalFromItsFailure) {
  CircuitBreaker breaker(1s);
  breaker.failed(steady_at(0s));
  EXPECT_TRUE(breaker.allow(steady_at(1s)));
  EXPECT_FALSE(breaker.failed(steady_at(1s) + 300ms));
  EXPECT_FALSE(breaker.allow(steady_at(2s)));
  EXPECT_TRUE(breaker.allow(steady_at(2s) + 300ms));
}

TEST(CircuitBreaker, ASuccessfulProbeClosesItOnce) {
  CircuitBreaker breaker(1s);
  breaker.failed(steady_at(0s));
  ASSERT_TRUE(breaker.allow(steady_at(1s)));
  const std::uint64_t probe = breaker.ticket();
  EXPECT_TRUE(breaker.succeeded(probe));
  EXPECT_FALSE(breaker.is_open());
  EXPECT_FALSE(breaker.succeeded(probe));  // closed already: nothing to log
  EXPECT_TRUE(breaker.allow(steady_at(1s)));
  EXPECT_TRUE(breaker.allow(steady_at(1s)));
  // Failing again opens it again, with a fresh interval.
  EXPECT_TRUE(breaker.failed(steady_at(5s)));
  EXPECT_FALSE(breaker.allow(steady_at(5s) + 999ms));
  EXPECT_TRUE(breaker.allow(steady_at(6s)));
}

TEST(CircuitBreaker, ALateSuccessOfACallSentBeforeAFailureDoesNotCloseIt) {
  CircuitBreaker breaker(1s);
  const std::uint64_t early = breaker.ticket();  // sent while Redis still answered
  EXPECT_TRUE(breaker.failed(steady_at(0s)));    // another call timed out
  EXPECT_FALSE(breaker.succeeded(early));        // the early call's answer comes in late
  EXPECT_TRUE(breaker.is_open());
  EXPECT_FALSE(breaker.allow(steady_at(500ms)));  // still no traffic but the probe
  ASSERT_TRUE(breaker.allow(steady_at(1s)));
  const std::uint64_t probe = breaker.ticket();
  EXPECT_TRUE(breaker.succeeded(probe));
  EXPECT_FALSE(breaker.is_open());
}

TEST(CircuitBreaker, AProbeThatSucceedsAfterAnotherFailureDoesNotCloseIt) {
  CircuitBreaker breaker(1s);
  breaker.failed(steady_at(0s));
  ASSERT_TRUE(breaker.allow(steady_at(1s)));
  const std::uint64_t probe = breaker.ticket();
  breaker.failed(steady_at(1s) + 10ms);  // a call on another loop failed meanwhile
  EXPECT_FALSE(breaker.succeeded(probe));
  EXPECT_TRUE(breaker.is_open());
}

}  // namespace
}  // namespace sluice::store::redis
