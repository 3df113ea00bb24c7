#include "limiter/shard_table.hpp"

#include <gtest/gtest.h>

#include <random>
#include <unordered_map>

namespace sluice::limiter {
namespace {

TEST(ShardTable, AgreesWithAReferenceMapUnderRandomInsertsAndErases) {
  ShardTable<int> table;
  std::unordered_map<KeyHash, int> reference;
  std::mt19937_64 random(12345);
  for (int step = 0; step < 200'000; ++step) {
    // Few distinct keys, so that probe runs collide and wrap often.
    const KeyHash key = random() % 2000 + 1;
    const std::size_t index = table.find(key);
    const auto expected = reference.find(key);
    ASSERT_EQ(index != ShardTable<int>::kNotFound, expected != reference.end()) << step;
    if (index == ShardTable<int>::kNotFound) {
      table.insert(key, step);
      reference.emplace(key, step);
    } else {
      ASSERT_EQ(table.slot(index).state, expected->second);
      if (random() % 2 == 0) {
        table.erase(index);
        reference.erase(expected);
      }
    }
    ASSERT_EQ(table.size(), reference.size());
    if (step % 10'000 == 0) {
      table.shrink_if_sparse();
    }
  }
}

TEST(ShardTable, StaysBetweenTwoThirdsAndFourFifthsFullAsItGrows) {
  ShardTable<int> table;
  for (KeyHash key = 1; key <= 100'000; ++key) {
    table.insert(key, 0);
    ASSERT_LE(table.size() * 5, table.capacity() * 4) << key;
    if (table.capacity() > 100) {
      ASSERT_GE(table.size() * 100, table.capacity() * 63) << key;
    }
  }
}

TEST(ShardTable, ShrinksWhenSparseAndFreesEverythingWhenEmpty) {
  ShardTable<int> table;
  for (KeyHash key = 1; key <= 1000; ++key) {
    table.insert(key, 0);
  }
  const std::size_t full = table.capacity();
  for (KeyHash key = 1; key <= 990; ++key) {
    table.erase(table.find(key));
  }
  table.shrink_if_sparse();
  EXPECT_EQ(table.size(), 10U);
  EXPECT_LT(table.capacity(), full / 16);
  EXPECT_GT(table.capacity() * 4, table.size() * 5);
  for (KeyHash key = 991; key <= 1000; ++key) {
    EXPECT_NE(table.find(key), ShardTable<int>::kNotFound);
  }
  for (KeyHash key = 991; key <= 1000; ++key) {
    table.erase(table.find(key));
  }
  table.shrink_if_sparse();
  EXPECT_EQ(table.memory_bytes(), 0U);
}

}  // namespace
}  // namespace sluice::limiter
