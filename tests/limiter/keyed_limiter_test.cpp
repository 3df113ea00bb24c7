#include "limiter/keyed_limiter.hpp"

#include <gtest/gtest.h>

#include <string>

#include "limiter/fixed_window.hpp"
#include "limiter/key_hash.hpp"
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

}  // namespace
}  // namespace sluice::limiter
