// The verdict for a request that could pass at a given time: reject mode admits only now,
// delay mode also within max_delay, and a retry-after says when a retry could pass.
#include "limiter/verdict.hpp"

#include <gtest/gtest.h>

#include "tests/support/manual_clock.hpp"

namespace sluice::limiter {
namespace {

using namespace std::chrono_literals;
using test::at;

constexpr Policy kReject{};
constexpr Policy kDelay{.mode = Mode::delay, .max_delay = 1s};

void expect_verdict(const Verdict& verdict, bool admitted, Duration hold, Duration retry_after) {
  EXPECT_EQ(verdict.admitted, admitted);
  EXPECT_EQ(verdict.hold, hold);
  EXPECT_EQ(verdict.retry_after, retry_after);
}

TEST(VerdictAt, AdmitsNowOrEarlierInEitherMode) {
  for (const Policy& policy : {kReject, kDelay}) {
    expect_verdict(verdict_at(at(5s), at(5s), policy), true, 0s, 0s);
    expect_verdict(verdict_at(at(2s), at(5s), policy), true, 0s, 0s);
  }
}

TEST(VerdictAt, RejectModeRefusesUntilThen) {
  expect_verdict(verdict_at(at(5s) + 300ms, at(5s), kReject), false, 0s, 300ms);
  expect_verdict(verdict_at(at(5s) + 1ns, at(5s), kReject), false, 0s, 1ns);
}

TEST(VerdictAt, DelayModeHoldsUpToMaxDelay) {
  expect_verdict(verdict_at(at(5s) + 300ms, at(5s), kDelay), true, 300ms, 0s);
  expect_verdict(verdict_at(at(6s), at(5s), kDelay), true, 1s, 0s);  // exactly max_delay
  // Beyond it: refused, and a retry after the excess would be held no longer than max_delay.
  expect_verdict(verdict_at(at(6s) + 500ms, at(5s), kDelay), false, 0s, 500ms);
  expect_verdict(verdict_at(at(6s) + 1ns, at(5s), kDelay), false, 0s, 1ns);
}

TEST(VerdictAt, NeverIsRefusedForeverInEitherMode) {
  for (const Policy& policy : {kReject, kDelay}) {
    expect_verdict(verdict_at(kNever, at(5s), policy), false, 0s, Duration::max());
  }
}

}  // namespace
}  // namespace sluice::limiter
