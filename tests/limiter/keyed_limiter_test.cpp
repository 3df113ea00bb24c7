#include "limiter/keyed_limiter.hpp"

#include <gtest/gtest.h>

#include <string>

#include "limiter/fixed_window.hpp"
#include "limiter/key_hash.hpp"
#include "limiter/make_limiter.hpp"
#include "limiter/sliding_log.hpp"
#include "limiter/token_bucket.hpp"
#include "tests/support/manual_clock.hpp"

namespace sluice::limiter {
namespace {

using namespace std::chrono_literals;
using test::at;

KeyHash key(int n) {
  std::string name = "client-";
  name += std::to_string(n);
  return hash_key(name, 42);
}

KeyedLimiter<TokenBucket> one_per_second(std::size_t max_keys) {
  return {TokenBucket({.rate = {.permits = 1, .period = 1s}, .burst = 1}), Policy{}, max_keys};
}

TEST(KeyedLimiter, KeepsOneStatePerKey) {
  auto limiter = one_per_second(1000);
  EXPECT_TRUE(limiter.decide(key(1), at(0s), 1).verdict.admitted);
  EXPECT_FALSE(limiter.decide(key(1), at(0s), 1).verdict.admitted);
  EXPECT_TRUE(limiter.decide(key(2), at(0s), 1).verdict.admitted);
  EXPECT_EQ(limiter.stats().keys, 2U);
  const Outcome outcome = limiter.decide(key(1), at(0s), 1);
  EXPECT_EQ(outcome.verdict.retry_after, 1s);
  EXPECT_EQ(outcome.status.remaining, 0U);
  EXPECT_EQ(outcome.status.reset, 1s);
}

TEST(KeyedLimiter, PeekShowsAKeyWithoutConsuming) {
  auto limiter = one_per_second(1000);
  EXPECT_EQ(limiter.peek(key(7), at(0s)).remaining, 1U);
  EXPECT_EQ(limiter.stats().keys, 0U);  // peeking tracks nothing
  limiter.decide(key(7), at(0s), 1);
  EXPECT_EQ(limiter.peek(key(7), at(500ms)).remaining, 0U);
  EXPECT_EQ(limiter.peek(key(7), at(500ms)).reset, 500ms);
}

TEST(KeyedLimiter, ForgetsARefusedNewKeyAtOnce) {
  KeyedLimiter<FixedWindow> limiter(FixedWindow({.limit = 2, .window = 1s}), Policy{}, 1000);
  EXPECT_FALSE(limiter.decide(key(1), at(0s), 3).verdict.admitted);
  EXPECT_EQ(limiter.stats().keys, 0U);
}

TEST(KeyedLimiter, IdleKeysExpireAndGiveTheirMemoryBack) {
  KeyedLimiter<SlidingLog> limiter(SlidingLog({.limit = 5, .window = 10s}), Policy{}, 1'000'000);
  const std::uint64_t empty = limiter.stats().memory_bytes;
  for (int n = 0; n < 10'000; ++n) {
    limiter.decide(key(n), at(0s), 1);
  }
  EXPECT_EQ(limiter.stats().keys, 10'000U);
  EXPECT_GT(limiter.stats().memory_bytes, empty + 10'000 * 16);
  EXPECT_EQ(limiter.collect_idle(at(10s) - 1ns), 0U);  // still inside the window
  EXPECT_EQ(limiter.collect_idle(at(10s)), 10'000U);
  EXPECT_EQ(limiter.stats().keys, 0U);
  EXPECT_EQ(limiter.stats().memory_bytes, empty);
}

TEST(KeyedLimiter, NewKeysSweepIdleOnesAway) {
  auto limiter = one_per_second(1'000'000);
  for (int n = 0; n < 1000; ++n) {
    limiter.decide(key(n), at(0s), 1);
  }
  // Much later, other keys arrive: each insertion sweeps a couple of slots, so the 1000 idle
  // keys are gone after a few thousand new ones without any explicit collection.
  for (int n = 1000; n < 6000; ++n) {
    limiter.decide(key(n), at(std::chrono::seconds(10 + (n - 1000) / 1000)), 1);
  }
  EXPECT_LT(limiter.stats().keys, 2000U);
}

TEST(KeyedLimiter, NeverHoldsMoreThanMaxKeys) {
  auto limiter = one_per_second(64);
  for (int n = 0; n < 10'000; ++n) {
    limiter.decide(key(n), at(std::chrono::milliseconds(n)), 1);
    ASSERT_LE(limiter.stats().keys, 64U);
  }
}

TEST(KeyedLimiter, AKeyFloodCannotFreeALimitedClient) {
  // A client exhausts its bucket (2 per minute), then 100000 new keys, one request each, flood a
  // limiter that can hold 8. The flood evicts its own idle keys; the client stays limited.
  KeyedLimiter<TokenBucket> limiter(
      TokenBucket({.rate = {.permits = 2, .period = 1min}, .burst = 2}), Policy{}, 8);
  const KeyHash abuser = hash_key("abuser", 42);
  ASSERT_TRUE(limiter.decide(abuser, at(0s), 2).verdict.admitted);
  for (int n = 0; n < 100'000; ++n) {
    limiter.decide(key(n), at(1s), 1);
    ASSERT_FALSE(limiter.decide(abuser, at(1s), 1).verdict.admitted) << "after " << n;
  }
  const LimiterStats stats = limiter.stats();
  EXPECT_EQ(stats.keys, 8U);
  EXPECT_GT(stats.evictions, 90'000U);
  EXPECT_EQ(stats.overflows, 0U);
}

TEST(KeyedLimiter, EvictsFreshThenMostIdleKeysFirst) {
  KeyedLimiter<FixedWindow> limiter(FixedWindow({.limit = 3, .window = 1min}), Policy{}, 4);
  // Key 0 is limited; keys 1..3 used once each in the current minute.
  for (int i = 0; i < 3; ++i) {
    limiter.decide(key(0), at(0s), 1);
  }
  limiter.decide(key(1), at(0s), 1);
  limiter.decide(key(2), at(0s), 1);
  limiter.decide(key(3), at(0s), 1);
  ASSERT_EQ(limiter.stats().keys, 4U);
  // A new key arrives: no key is fresh; key 0 is limited; keys 1..3 tie (same window end).
  EXPECT_TRUE(limiter.decide(key(4), at(1s), 1).verdict.admitted);
  EXPECT_EQ(limiter.stats().evictions, 1U);
  EXPECT_FALSE(limiter.decide(key(0), at(1s), 1).verdict.admitted);
  // In the next minute every old key is fresh: new keys take their places, nothing evicted.
  for (int n = 10; n < 14; ++n) {
    EXPECT_TRUE(limiter.decide(key(n), at(61s), 1).verdict.admitted);
  }
  EXPECT_EQ(limiter.stats().evictions, 1U);
}

TEST(KeyedLimiter, RefusesANewKeyWhenEveryTrackedKeyIsLimited) {
  KeyedLimiter<FixedWindow> limiter(FixedWindow({.limit = 1, .window = 1min}), Policy{}, 2);
  limiter.decide(key(0), at(0s), 1);
  limiter.decide(key(1), at(0s), 1);
  const Outcome refused = limiter.decide(key(2), at(20s), 1);
  EXPECT_FALSE(refused.verdict.admitted);
  EXPECT_EQ(refused.verdict.retry_after, 40s);  // when the first tracked key frees up
  EXPECT_EQ(limiter.stats().overflows, 1U);
  EXPECT_TRUE(limiter.decide(key(2), at(60s), 1).verdict.admitted);
}

// Costs learnt after the response (SPEC §9): charge() consumes whether or not it fits, the key
// goes into debt and stays limited until it has paid it back; refund() gives back what an
// estimate reserved too much. Each algorithm, with exact numbers.

TEST(ChargeAfterTheResponse, ATokenBucketInDebtRefillsItBeforeItAdmits) {
  // 100 tokens a minute: one every 600 ms.
  const auto limiter = make_limiter({.algorithm = AlgorithmKind::token_bucket,
                                     .rate = {.permits = 100, .period = 1min},
                                     .burst = 100});
  const Status after = limiter->charge(key(1), at(0s), 150);
  EXPECT_EQ(after.remaining, 0U);
  EXPECT_EQ(after.reset, 90s);                                  // 150 tokens to refill
  const Outcome in_debt = limiter->decide(key(1), at(30s), 1);  // -50 + 50 = 0 tokens
  EXPECT_FALSE(in_debt.verdict.admitted);
  EXPECT_EQ(in_debt.verdict.retry_after, 600ms);
  EXPECT_TRUE(limiter->decide(key(1), at(30s) + 600ms, 1).verdict.admitted);
}

TEST(ChargeAfterTheResponse, ATokenBucketGivesBackWhatAnEstimateReservedTooMuch) {
  const auto limiter = make_limiter({.algorithm = AlgorithmKind::token_bucket,
                                     .rate = {.permits = 100, .period = 1min},
                                     .burst = 100});
  ASSERT_TRUE(limiter->decide(key(1), at(0s), 40).verdict.admitted);  // 60 left
  // 30 back, as though they were the first to refill: less the 10 refilled since.
  limiter->refund(key(1), at(0s), at(6s), 30);  // 60 + 10 + 20
  EXPECT_EQ(limiter->peek(key(1), at(6s)).remaining, 90U);
  limiter->refund(key(1), at(0s), at(6s), 30);  // never past full
  EXPECT_EQ(limiter->peek(key(1), at(6s)).remaining, 100U);
  EXPECT_EQ(limiter->charge(key(1), at(6s), 100).remaining, 0U);
}

TEST(ChargeAfterTheResponse, ATokenBucketThatRefilledSinceGivesNothingBack) {
  const auto limiter = make_limiter({.algorithm = AlgorithmKind::token_bucket,
                                     .rate = {.permits = 100, .period = 1min},
                                     .burst = 100});
  ASSERT_TRUE(limiter->decide(key(1), at(0s), 40).verdict.admitted);
  // Full again at 24 s; another request takes 50 at 30 s. The 30 reserved at 0 s refilled long
  // ago: giving them back would admit 30 the bucket never held.
  ASSERT_TRUE(limiter->decide(key(1), at(30s), 50).verdict.admitted);
  limiter->refund(key(1), at(0s), at(30s), 30);
  EXPECT_EQ(limiter->peek(key(1), at(30s)).remaining, 50U);
}

TEST(ChargeAfterTheResponse, ALeakyBucketInDebtDrainsItFirst) {
  // 10 a second, no burst: a charge of 5 takes 500 ms to drain before the next request fits.
  const auto limiter = make_limiter(
      {.algorithm = AlgorithmKind::leaky_bucket, .rate = {.permits = 10, .period = 1s}});
  limiter->charge(key(1), at(0s), 5);
  const Outcome refused = limiter->decide(key(1), at(400ms), 1);
  EXPECT_FALSE(refused.verdict.admitted);
  EXPECT_EQ(refused.verdict.retry_after, 100ms);
  EXPECT_TRUE(limiter->decide(key(1), at(500ms), 1).verdict.admitted);
}

TEST(ChargeAfterTheResponse, AFixedWindowOverItsLimitIsFullUntilItEnds) {
  const auto limiter =
      make_limiter({.algorithm = AlgorithmKind::fixed_window, .limit = 10, .window = 1s});
  ASSERT_TRUE(limiter->decide(key(1), at(0s), 1).verdict.admitted);
  const Status after = limiter->charge(key(1), at(500ms), 14);  // 15 of 10
  EXPECT_EQ(after.remaining, 0U);
  EXPECT_EQ(after.reset, 500ms);
  const Outcome refused = limiter->decide(key(1), at(900ms), 1);
  EXPECT_FALSE(refused.verdict.admitted);
  EXPECT_EQ(refused.verdict.retry_after, 100ms);
  EXPECT_EQ(refused.status.remaining, 0U);
  // The debt ends with its window: a fixed window counts each window on its own.
  EXPECT_EQ(limiter->decide(key(1), at(1s), 1).status.remaining, 9U);
}

TEST(ChargeAfterTheResponse, AFixedWindowGivesBackOnlyWithinTheWindowCharged) {
  const auto limiter =
      make_limiter({.algorithm = AlgorithmKind::fixed_window, .limit = 10, .window = 1s});
  ASSERT_TRUE(limiter->decide(key(1), at(0s), 5).verdict.admitted);
  limiter->refund(key(1), at(0s), at(200ms), 3);
  EXPECT_EQ(limiter->peek(key(1), at(200ms)).remaining, 8U);
  ASSERT_TRUE(limiter->decide(key(1), at(1s), 5).verdict.admitted);
  limiter->refund(key(1), at(200ms), at(1s), 5);  // charged in a window that has passed
  EXPECT_EQ(limiter->peek(key(1), at(1s)).remaining, 5U);
}

TEST(ChargeAfterTheResponse, AFixedWindowSaturatesAtTheLargestCount) {
  const auto limiter = make_limiter(
      {.algorithm = AlgorithmKind::fixed_window, .limit = 4'294'967'295, .window = 1s});
  limiter->charge(key(1), at(0s), 4'294'967'295);
  const Status after = limiter->charge(key(1), at(0s), 4'294'967'295);
  EXPECT_EQ(after.remaining, 0U);
  EXPECT_FALSE(limiter->decide(key(1), at(999ms), 1).verdict.admitted);
  EXPECT_EQ(limiter->decide(key(1), at(1s), 1).status.remaining, 4'294'967'294U);
}

TEST(ChargeAfterTheResponse, ASlidingWindowCarriesTheDebtIntoTheNextWindowWeighted) {
  const auto limiter =
      make_limiter({.algorithm = AlgorithmKind::sliding_window, .limit = 10, .window = 1s});
  limiter->charge(key(1), at(500ms), 15);
  // In the next window, 15 · (1 − elapsed) + 1 <= 10 from 400 ms in.
  const Outcome refused = limiter->decide(key(1), at(1390ms), 1);
  EXPECT_FALSE(refused.verdict.admitted);
  EXPECT_EQ(refused.verdict.retry_after, 10ms);
  EXPECT_TRUE(limiter->decide(key(1), at(1400ms), 1).verdict.admitted);
  // A refund of the charged window's permits, now the window before.
  limiter->refund(key(1), at(500ms), at(1400ms), 15);
  EXPECT_EQ(limiter->peek(key(1), at(1400ms)).remaining, 9U);
}

TEST(ChargeAfterTheResponse, AWheelHoldsTheDebtUntilItsBucketTurnsOut) {
  const auto limiter =
      make_limiter({.algorithm = AlgorithmKind::wheel, .limit = 10, .window = 1s, .slots = 10});
  limiter->charge(key(1), at(50ms), 15);
  EXPECT_FALSE(limiter->decide(key(1), at(999ms), 1).verdict.admitted);
  EXPECT_TRUE(limiter->decide(key(1), at(1s), 1).verdict.admitted);
  limiter->charge(key(1), at(1s), 4);
  limiter->refund(key(1), at(1s), at(1s), 3);
  EXPECT_EQ(limiter->peek(key(1), at(1s)).remaining, 8U);  // 1 + 4 − 3 of 10
}

TEST(ChargeAfterTheResponse, ASlidingLogLogsNoMoreThanItsLimit) {
  const auto limiter =
      make_limiter({.algorithm = AlgorithmKind::sliding_log, .limit = 10, .window = 1s});
  ASSERT_TRUE(limiter->decide(key(1), at(0s), 3).verdict.admitted);
  EXPECT_EQ(limiter->charge(key(1), at(0s), 1'000'000).remaining, 0U);  // 7 logged, not a million
  EXPECT_FALSE(limiter->decide(key(1), at(999ms), 1).verdict.admitted);
  EXPECT_EQ(limiter->decide(key(1), at(1s), 1).status.remaining, 9U);
}

/// Every algorithm, each with a small budget in reject mode.
struct Forgettable {
  const char* name;
  LimiterOptions options;
};

class ForgetAKey : public ::testing::TestWithParam<Forgettable> {};

/// Requests of `client` admitted out of 5 at `now`.
int admitted_of(Limiter& limiter, int client, TimePoint now) {
  int admitted = 0;
  for (int i = 0; i < 5; ++i) {
    admitted += limiter.decide(key(client), now, 1).verdict.admitted ? 1 : 0;
  }
  return admitted;
}

TEST_P(ForgetAKey, GivesThatKeyAFullBudgetAndLeavesTheOthers) {
  const auto limiter = make_limiter(GetParam().options);
  const TimePoint now = at(100ms);
  const Status fresh = limiter->peek(key(1), now);
  const int budget = admitted_of(*limiter, 1, now);
  ASSERT_GE(budget, 1);
  ASSERT_LT(budget, 5);
  EXPECT_EQ(admitted_of(*limiter, 2, now), budget);
  EXPECT_EQ(limiter->stats().keys, 2U);

  EXPECT_TRUE(limiter->forget(key(1)));

  EXPECT_EQ(limiter->stats().keys, 1U);
  EXPECT_EQ(limiter->peek(key(1), now).remaining, fresh.remaining);
  EXPECT_EQ(admitted_of(*limiter, 1, now), budget);
  EXPECT_EQ(admitted_of(*limiter, 2, now), 0);  // others keep their state
  EXPECT_FALSE(limiter->forget(key(3)));        // never seen: nothing to forget
}

INSTANTIATE_TEST_SUITE_P(
    EveryAlgorithm, ForgetAKey,
    ::testing::Values(
        Forgettable{"fixed_window",
                    {.algorithm = AlgorithmKind::fixed_window, .limit = 2, .window = 1min}},
        Forgettable{"sliding_log",
                    {.algorithm = AlgorithmKind::sliding_log, .limit = 2, .window = 1min}},
        Forgettable{"sliding_window",
                    {.algorithm = AlgorithmKind::sliding_window, .limit = 2, .window = 1min}},
        Forgettable{"wheel", {.algorithm = AlgorithmKind::wheel, .limit = 2, .window = 1min}},
        Forgettable{"token_bucket",
                    {.algorithm = AlgorithmKind::token_bucket,
                     .rate = {.permits = 1, .period = 1min},
                     .burst = 2}},
        Forgettable{"warming_bucket",
                    {.algorithm = AlgorithmKind::token_bucket,
                     .rate = {.permits = 2, .period = 1min},
                     .burst = 2,
                     .warmup = 1s}},
        Forgettable{"leaky_bucket",
                    {.algorithm = AlgorithmKind::leaky_bucket,
                     .rate = {.permits = 1, .period = 1min},
                     .burst = 1}},
        Forgettable{"concurrency", {.algorithm = AlgorithmKind::concurrency, .limit = 2}}),
    [](const ::testing::TestParamInfo<Forgettable>& param) {
      return std::string(param.param.name);
    });

}  // namespace
}  // namespace sluice::limiter
