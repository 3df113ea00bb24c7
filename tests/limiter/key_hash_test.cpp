#include "limiter/key_hash.hpp"

#include <gtest/gtest.h>

#include <string>
#include <unordered_set>

namespace sluice::limiter {
namespace {

TEST(KeyHash, IsStableForOneSeedAndDiffersAcrossSeeds) {
  EXPECT_EQ(hash_key("203.0.113.7", 1), hash_key("203.0.113.7", 1));
  EXPECT_NE(hash_key("203.0.113.7", 1), hash_key("203.0.113.7", 2));
  EXPECT_EQ(hash_key("203.0.113.7"), hash_key("203.0.113.7"));
}

TEST(KeyHash, SpreadsSimilarKeysWithoutCollisions) {
  std::unordered_set<KeyHash> seen;
  std::string key;
  for (int n = 0; n < 200'000; ++n) {
    key = "10.0.";
    key += std::to_string(n / 256);
    key += '.';
    key += std::to_string(n % 256);
    ASSERT_TRUE(seen.insert(hash_key(key, 7)).second) << key;
  }
  // Every length from empty to past two 16-byte blocks, and prefixes of one another.
  const std::string long_key(40, 'a');
  for (std::size_t length = 0; length <= long_key.size(); ++length) {
    ASSERT_TRUE(seen.insert(hash_key(std::string_view(long_key).substr(0, length), 7)).second);
  }
}

TEST(KeyHash, NeverReturnsZero) {
  for (std::uint64_t seed = 0; seed < 1000; ++seed) {
    EXPECT_NE(hash_key("", seed), 0U);
  }
}

}  // namespace
}  // namespace sluice::limiter
