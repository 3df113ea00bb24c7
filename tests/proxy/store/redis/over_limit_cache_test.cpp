// The over-limit cache: a refusal remembered for its key and cost until its retry-after, told
// apart by the full hash when keys share a slot. A manual clock's times.
#include "proxy/store/redis/over_limit_cache.hpp"

#include <gtest/gtest.h>

#include "tests/support/manual_clock.hpp"

namespace sluice::store::redis {
namespace {

using namespace std::chrono_literals;
using limiter::Outcome;
using test::at;

/// A refusal as the store gives it: wait `retry_after`, `remaining` left, whole after `reset`.
Outcome refused(limiter::Duration retry_after, std::uint64_t remaining, limiter::Duration reset) {
  return {.verdict = {.admitted = false, .hold = {}, .retry_after = retry_after},
          .status = {.remaining = remaining, .reset = reset}};
}

constexpr std::uint64_t kKey = 0x5eed'0000'0000'0042;

TEST(OverLimitCache, KnowsNothingAtFirst) {
  const OverLimitCache cache;
  EXPECT_FALSE(cache.refusal(kKey, 1, at(0s)).has_value());
  EXPECT_FALSE(cache.refusal(0, 0, at(0s)).has_value());  // an empty slot matches no key
}

TEST(OverLimitCache, RefusesTheSameCostUntilTheRetryAfter) {
  OverLimitCache cache;
  cache.remember(kKey, 1, at(10s), refused(5s, 0, 8s));
  const std::optional<Outcome> later = cache.refusal(kKey, 1, at(11s));
  ASSERT_TRUE(later.has_value());
  EXPECT_FALSE(later->verdict.admitted);
  EXPECT_EQ(later->verdict.hold, 0s);
  EXPECT_EQ(later->verdict.retry_after, 4s);
  EXPECT_EQ(later->status.remaining, 0U);
  EXPECT_EQ(later->status.reset, 7s);
  EXPECT_EQ(cache.refusal(kKey, 1, at(15s) - 1ns)->verdict.retry_after, 1ns);
  EXPECT_FALSE(cache.refusal(kKey, 1, at(15s)).has_value());  // it could pass now: ask
}

TEST(OverLimitCache, AnotherCostIsNotAnsweredFromIt) {
  OverLimitCache cache;
  cache.remember(kKey, 3, at(0s), refused(2s, 1, 2s));
  EXPECT_TRUE(cache.refusal(kKey, 3, at(1s)).has_value());
  EXPECT_FALSE(cache.refusal(kKey, 1, at(1s)).has_value());
  EXPECT_FALSE(cache.refusal(kKey, 4, at(1s)).has_value());
}

TEST(OverLimitCache, ReportsLessRemainingThanTheCostAndNoNegativeReset) {
  OverLimitCache cache;
  // A store's remaining can exceed a refused cost (another limiter of the request refused it):
  // the cached answer never says the cost would fit.
  cache.remember(kKey, 3, at(0s), refused(10s, 7, 2s));
  const std::optional<Outcome> refusal = cache.refusal(kKey, 3, at(5s));
  ASSERT_TRUE(refusal.has_value());
  EXPECT_EQ(refusal->status.remaining, 2U);
  EXPECT_EQ(refusal->status.reset, 0s);  // its reset has passed; the refusal has not
  EXPECT_EQ(refusal->verdict.retry_after, 5s);
}

TEST(OverLimitCache, KeysSharingASlotReplaceEachOtherAndAreNeverMistaken) {
  OverLimitCache cache;
  const std::uint64_t neighbour = kKey + OverLimitCache::kEntries;  // the same slot
  cache.remember(kKey, 1, at(0s), refused(10s, 0, 10s));
  EXPECT_FALSE(cache.refusal(neighbour, 1, at(1s)).has_value());
  cache.remember(neighbour, 1, at(1s), refused(10s, 0, 10s));
  EXPECT_TRUE(cache.refusal(neighbour, 1, at(2s)).has_value());
  EXPECT_FALSE(cache.refusal(kKey, 1, at(2s)).has_value());  // replaced: costs a round trip
  // Keys in other slots are kept.
  cache.remember(kKey + 1, 1, at(1s), refused(10s, 0, 10s));
  EXPECT_TRUE(cache.refusal(kKey + 1, 1, at(2s)).has_value());
  EXPECT_TRUE(cache.refusal(neighbour, 1, at(2s)).has_value());
}

}  // namespace
}  // namespace sluice::store::redis
