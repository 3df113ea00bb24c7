#include "proxy/telemetry/space_saving.hpp"

#include <gtest/gtest.h>

#include <map>
#include <random>
#include <string>
#include <vector>

namespace sluice::telemetry {
namespace {

/// Keys 1, 2, 3, ...: never 0, which no key hash is.
limiter::KeyHash key_number(std::uint64_t n) { return n + 1; }

const auto kNoText = [](HeavyKeyText&) {};

std::map<limiter::KeyHash, HeavyKey> by_key(const SpaceSaving& summary) {
  std::map<limiter::KeyHash, HeavyKey> keys;
  for (const HeavyKey& counted : summary) {
    keys[counted.key] = counted;
  }
  return keys;
}

TEST(SpaceSaving, CountsExactlyWhileUnderCapacity) {
  SpaceSaving summary(8);
  for (std::uint64_t n = 0; n < 8; ++n) {
    for (std::uint64_t i = 0; i <= n; ++i) {
      summary.count(key_number(n), i % 2 == 1, kNoText);
    }
  }
  const auto keys = by_key(summary);
  ASSERT_EQ(keys.size(), 8U);
  for (std::uint64_t n = 0; n < 8; ++n) {
    const HeavyKey& counted = keys.at(key_number(n));
    EXPECT_EQ(counted.requests, n + 1);
    EXPECT_EQ(counted.limited, (n + 1) / 2);
    EXPECT_EQ(counted.error, 0U);
  }
}

TEST(SpaceSaving, DescribesAKeyOnlyWhenItEnters) {
  SpaceSaving summary(2);
  int described = 0;
  const auto describe = [&described](HeavyKeyText& about) {
    ++described;
    about.assign("10.0.0." + std::to_string(described));
  };
  for (int i = 0; i < 100; ++i) {
    summary.count(key_number(1), false, describe);
  }
  EXPECT_EQ(described, 1);
  summary.count(key_number(2), false, describe);
  summary.count(key_number(3), false, describe);  // takes key 2's place: described again
  EXPECT_EQ(described, 3);
  const auto keys = by_key(summary);
  EXPECT_EQ(keys.at(key_number(1)).about.text(), "10.0.0.1");
  EXPECT_EQ(keys.at(key_number(3)).about.text(), "10.0.0.3");
  EXPECT_EQ(keys.at(key_number(3)).requests, 2U);  // key 2's one, inherited, and its own
  EXPECT_EQ(keys.at(key_number(3)).error, 1U);
  EXPECT_FALSE(keys.contains(key_number(2)));
}

TEST(SpaceSaving, CutsALongKeyToItsInlineText) {
  SpaceSaving summary(1);
  const std::string long_key(300, 'k');
  summary.count(key_number(1), false, [&](HeavyKeyText& about) { about.assign(long_key); });
  EXPECT_EQ(summary.begin()->about.text(), long_key.substr(0, HeavyKeyText::kCapacity));
}

TEST(SpaceSaving, KeepsItsErrorBoundWhenOverCapacity) {
  // A skewed stream of 200 keys over 32 places (Zipf-like): each count is at least the key's
  // true count and exceeds it by at most its error, and every key seen more than total /
  // capacity times is monitored.
  constexpr std::size_t kCapacity = 32;
  SpaceSaving summary(kCapacity);
  std::mt19937_64 random(7);
  std::vector<double> weights;
  for (int k = 1; k <= 200; ++k) {
    weights.push_back(1.0 / k);
  }
  std::discrete_distribution<std::uint64_t> pick(weights.begin(), weights.end());
  std::map<limiter::KeyHash, std::uint32_t> truth;
  constexpr std::uint32_t kTotal = 50'000;
  for (std::uint32_t i = 0; i < kTotal; ++i) {
    const limiter::KeyHash key = key_number(pick(random));
    ++truth[key];
    summary.count(key, false, kNoText);
  }
  ASSERT_GT(truth.size(), kCapacity);
  EXPECT_EQ(summary.size(), kCapacity);
  const auto keys = by_key(summary);
  std::uint64_t counted_total = 0;
  for (const auto& [key, counted] : keys) {
    counted_total += counted.requests;
    EXPECT_GE(counted.requests, truth.at(key));
    EXPECT_LE(counted.requests - counted.error, truth.at(key));
  }
  EXPECT_EQ(counted_total, kTotal);  // Space-Saving's counts always sum to the stream's length
  for (const auto& [key, seen] : truth) {
    if (seen > kTotal / kCapacity) {
      EXPECT_TRUE(keys.contains(key)) << "key " << key << " seen " << seen;
    }
  }
  // The heaviest key, a sixth of the stream, is counted exactly: it never left.
  EXPECT_EQ(keys.at(key_number(0)).requests, truth.at(key_number(0)));
}

TEST(SpaceSaving, FindsEveryKeyAgainAfterManyEvictions) {
  // Evictions delete from the open-addressed index: whatever stays must still be found (a
  // lost entry would be admitted twice, and the summary would hold a key two times).
  SpaceSaving summary(16);
  std::mt19937_64 random(11);
  for (int i = 0; i < 20'000; ++i) {
    summary.count(key_number(random() % 64), false, kNoText);
  }
  EXPECT_EQ(by_key(summary).size(), summary.size());
  summary.clear();
  EXPECT_EQ(summary.size(), 0U);
  summary.count(key_number(3), true, kNoText);
  EXPECT_EQ(summary.begin()->requests, 1U);
  EXPECT_EQ(summary.begin()->limited, 1U);
}

}  // namespace
}  // namespace sluice::telemetry
