#include "limiter/make_limiter.hpp"

#include <gtest/gtest.h>

#include <string>

#include "limiter/validate.hpp"
#include "tests/support/manual_clock.hpp"

namespace sluice::limiter {
namespace {

using namespace std::chrono_literals;

std::string refusal(const LimiterOptions& options) {
  try {
    make_limiter(options);
  } catch (const std::invalid_argument& error) {
    return error.what();
  }
  return "accepted";
}

TEST(MakeLimiter, RefusesInvalidParametersNamingThemAndTheirValues) {
  using enum AlgorithmKind;
  EXPECT_EQ(refusal({.algorithm = fixed_window, .limit = 0, .window = 1s}),
            "limit must be at least 1, got 0");
  EXPECT_EQ(refusal({.algorithm = sliding_window, .limit = 10, .window = 0s}),
            "window must be positive, got 0ns");
  EXPECT_EQ(refusal({.algorithm = sliding_log, .limit = 10, .window = -250ms}),
            "window must be positive, got -250ms");
  EXPECT_EQ(refusal({.algorithm = wheel, .limit = 10, .window = 1s, .slots = 0}),
            "slots must be at least 1, got 0");
  EXPECT_EQ(refusal({.algorithm = fixed_window, .limit = 5'000'000'000, .window = 1s}),
            "limit must be at most 4294967295, got 5000000000");
  EXPECT_EQ(refusal({.algorithm = token_bucket, .rate = {.permits = 0, .period = 1s}}),
            "rate must be at least 2.22507e-308, got 0");
  EXPECT_EQ(refusal({.algorithm = token_bucket, .rate = {.permits = 5, .period = 1s}, .burst = 0}),
            "burst must be at least 1, got 0");
  EXPECT_EQ(refusal({.algorithm = token_bucket,
                     .rate = {.permits = 5, .period = 1s},
                     .warmup = 1s,
                     .cold_factor = 0.5}),
            "cold_factor must be at least 1, got 0.5");
  EXPECT_EQ(refusal({.algorithm = leaky_bucket, .rate = {.permits = 5, .period = 1s}, .burst = -1}),
            "burst must be at least 0, got -1");
  EXPECT_EQ(refusal({.algorithm = concurrency, .limit = 0}), "limit must be at least 1, got 0");
  EXPECT_EQ(refusal({.algorithm = concurrency, .limit = 1, .max_keys = 0}),
            "max_keys must be at least 1, got 0");
  EXPECT_EQ(refusal({.algorithm = fixed_window,
                     .limit = 1,
                     .window = 1s,
                     .policy = {.mode = Mode::delay, .max_delay = -1s}}),
            "max_delay must be zero or positive, got -1s");
}

TEST(MakeLimiter, WindowsAndDelaysThatOutlastTheClockSaturate) {
  // Counts that would be kept, or requests held, past the clock's end (2262): "never" rather
  // than an overflow (UndefinedBehaviorSanitizer fails the asan build on one).
  using enum AlgorithmKind;
  const Duration centuries = std::chrono::days(100'000);
  const TimePoint now{std::chrono::seconds(1'704'067'200)};  // 2024-01-01
  for (const AlgorithmKind algorithm : {fixed_window, sliding_log, sliding_window, wheel}) {
    const auto limiter = make_limiter({.algorithm = algorithm,
                                       .limit = 1,
                                       .window = centuries,
                                       .slots = 4,
                                       .policy = {.mode = Mode::delay, .max_delay = centuries}});
    EXPECT_TRUE(limiter->decide(1, now, 1).verdict.admitted) << name_of(algorithm);
    for (int i = 0; i < 3; ++i) {
      const Outcome later = limiter->decide(1, now, 1);
      EXPECT_GE(later.status.reset, Duration::zero()) << name_of(algorithm);
      EXPECT_GE(later.verdict.retry_after, Duration::zero()) << name_of(algorithm);
    }
    EXPECT_FALSE(limiter->decide(1, now, 1).verdict.admitted) << name_of(algorithm);
  }
}

TEST(MakeLimiter, RefusesACostThatCanNeverBeAdmitted) {
  const auto limiter = make_limiter({.algorithm = AlgorithmKind::leaky_bucket,
                                     .rate = {.permits = 10, .period = 1s},
                                     .burst = 4});
  EXPECT_NO_THROW(require_admissible(*limiter, 5));
  try {
    require_admissible(*limiter, 6);
    FAIL() << "expected std::invalid_argument";
  } catch (const std::invalid_argument& error) {
    EXPECT_STREQ(error.what(), "cost 6 can never be admitted: at most 5 permits fit");
  }
  EXPECT_THROW(require_admissible(*limiter, 0), std::invalid_argument);
}

TEST(MakeLimiter, GivesTokenBucketsOneSecondOfRateAsDefaultBurst) {
  const auto fast = make_limiter(
      {.algorithm = AlgorithmKind::token_bucket, .rate = {.permits = 20, .period = 1s}});
  EXPECT_EQ(fast->max_cost(), 20U);
  const auto slow = make_limiter(
      {.algorithm = AlgorithmKind::token_bucket, .rate = {.permits = 30, .period = 1min}});
  EXPECT_EQ(slow->max_cost(), 1U);  // half a permit per second, but at least 1
}

TEST(MakeLimiter, NamesEveryAlgorithmBothWays) {
  for (const char* name : {"fixed_window", "sliding_log", "sliding_window", "wheel", "token_bucket",
                           "leaky_bucket", "concurrency"}) {
    const auto kind = algorithm_named(name);
    ASSERT_TRUE(kind.has_value()) << name;
    EXPECT_EQ(name_of(*kind), name);
  }
  EXPECT_FALSE(algorithm_named("sliding-window").has_value());
}

TEST(FormatDuration, UsesTheLargestExactUnit) {
  EXPECT_EQ(format_duration(250ms), "250ms");
  EXPECT_EQ(format_duration(90s), "90s");
  EXPECT_EQ(format_duration(2min), "2m");
  EXPECT_EQ(format_duration(48h), "2d");
  EXPECT_EQ(format_duration(1500ns), "1500ns");
  EXPECT_EQ(format_duration(0s), "0ns");
}

}  // namespace
}  // namespace sluice::limiter
