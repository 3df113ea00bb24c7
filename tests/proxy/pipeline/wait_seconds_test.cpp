// Waits in whole seconds: the rounding every answer, the admin port and replay share, and which
// decisions carry a Retry-After field.
#include "proxy/pipeline/wait_seconds.hpp"

#include <gtest/gtest.h>

namespace sluice::pipeline {
namespace {

using namespace std::chrono_literals;

TEST(WaitSeconds, AreWholeSecondsRoundedUp) {
  EXPECT_EQ(seconds_rounded_up(0s), 0U);
  EXPECT_EQ(seconds_rounded_up(-1s), 0U);
  EXPECT_EQ(seconds_rounded_up(1ns), 1U);
  EXPECT_EQ(seconds_rounded_up(1s), 1U);
  EXPECT_EQ(seconds_rounded_up(1s + 1ns), 2U);
}

TEST(WaitSeconds, RetryAfterIsAtLeastOne) {
  EXPECT_EQ(retry_after_seconds(0s), 1U);
  EXPECT_EQ(retry_after_seconds(1ns), 1U);
  EXPECT_EQ(retry_after_seconds(1500ms), 2U);
  EXPECT_EQ(retry_after_seconds(10min), 600U);
  EXPECT_EQ(retry_after_seconds(limiter::Duration::max()), 1U);  // never: no useful wait to give
}

TEST(WaitSeconds, EveryLimitedAnswerAndAWaitingDenialCarryRetryAfter) {
  Decision decision;
  decision.outcome = Outcome::limited;
  EXPECT_EQ(retry_after_field(decision), 1U);
  decision.retry_after = 2500ms;
  EXPECT_EQ(retry_after_field(decision), 3U);
  decision.outcome = Outcome::denied;
  EXPECT_EQ(retry_after_field(decision), 3U);  // a ban, for as long as it lasts
  decision.retry_after = {};
  EXPECT_EQ(retry_after_field(decision), std::nullopt);  // a deny list: no wait helps
  for (const Outcome outcome : {Outcome::allowed, Outcome::delayed, Outcome::no_route}) {
    decision.outcome = outcome;
    decision.retry_after = 5s;
    EXPECT_EQ(retry_after_field(decision), std::nullopt);
  }
}

}  // namespace
}  // namespace sluice::pipeline
