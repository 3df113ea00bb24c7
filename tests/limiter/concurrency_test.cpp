#include "limiter/concurrency.hpp"

#include <gtest/gtest.h>

#include "tests/support/drive.hpp"
#include "tests/support/manual_clock.hpp"

namespace sluice::limiter {
namespace {

using namespace std::chrono_literals;
using test::at;
using test::request;

TEST(Concurrency, AdmitsUpToTheLimitInFlight) {
  const Concurrency concurrency(2);
  Concurrency::State state;
  EXPECT_TRUE(request(concurrency, state, at(0s)).admitted);
  EXPECT_TRUE(request(concurrency, state, at(0s)).admitted);
  const Verdict refused = request(concurrency, state, at(0s));
  EXPECT_FALSE(refused.admitted);
  EXPECT_EQ(refused.retry_after, 1s);
  concurrency.release(state, 1);
  EXPECT_TRUE(request(concurrency, state, at(0s)).admitted);
}

TEST(Concurrency, IsFreshOnlyWithNothingInFlight) {
  const Concurrency concurrency(3);
  Concurrency::State state;
  EXPECT_EQ(concurrency.fresh_at(state, at(0s)), kAlways);
  request(concurrency, state, at(0s), 2);
  EXPECT_EQ(concurrency.fresh_at(state, at(0s)), kNever);  // time alone never frees a permit
  EXPECT_EQ(concurrency.status(state, at(0s)).remaining, 1U);
  concurrency.release(state, 5);  // releasing more than is held clamps at zero
  EXPECT_EQ(state.in_flight, 0U);
  EXPECT_EQ(concurrency.fresh_at(state, at(0s)), kAlways);
}

TEST(Concurrency, DelayModeCannotHoldAndRejects) {
  const Concurrency concurrency(1);
  Concurrency::State state;
  request(concurrency, state, at(0s));
  EXPECT_FALSE(request(concurrency, state, at(0s), 1, test::delay(10s)).admitted);
  EXPECT_EQ(request(concurrency, state, at(0s), 2).retry_after, Duration::max());
  EXPECT_THROW(Concurrency(0), std::invalid_argument);
}

}  // namespace
}  // namespace sluice::limiter
