// The table a loop keeps its leases in (`lease:` on a limiter with the Redis store): which lease
// serves a key, and which entry a new lease takes. How the store takes, spends and gives back
// leases is in redis_leases_test.cpp.
#include "proxy/store/redis/lease_table.hpp"

#include <gtest/gtest.h>

#include <vector>

#include "tests/support/manual_clock.hpp"

namespace sluice::store::redis {
namespace {

using namespace std::chrono_literals;
using limiter::TimePoint;
using test::at;

TEST(LeaseTable, ALeaseServesOnlyItsKeyWhileItHoldsTheCostAndHasNotEnded) {
  LeaseTable table;
  EXPECT_EQ(table.usable(42, 1, at(0s)), nullptr);
  LeaseTable::Lease& lease = table.entry_for(42, at(0s));
  lease.key = 42;
  lease.left = 3;
  lease.until = at(10s);
  EXPECT_EQ(table.usable(42, 3, at(1s)), &lease);
  EXPECT_EQ(table.usable(42, 4, at(1s)), nullptr);   // more than it holds
  EXPECT_EQ(table.usable(42, 1, at(10s)), nullptr);  // ended
  EXPECT_EQ(table.usable(43, 1, at(1s)), nullptr);
  EXPECT_EQ(&table.entry_for(42, at(1s)), &lease);  // a new lease of 42 replaces it
  int held = 0;
  table.for_each_held([&](LeaseTable::Lease& each) {
    held += static_cast<int>(each.left);
    EXPECT_EQ(&each, &lease);
  });
  EXPECT_EQ(held, 3);
}

TEST(LeaseTable, KeysOfOneSetPushOutTheLeaseThatEndsFirstOnceItIsFull) {
  LeaseTable table;
  constexpr std::uint64_t kSets = LeaseTable::kEntries / LeaseTable::kWays;
  // Keys 1, 1 + kSets, 1 + 2 kSets, ... share a set: four fit.
  std::vector<LeaseTable::Lease*> leases;
  for (std::uint64_t way = 0; way < LeaseTable::kWays; ++way) {
    LeaseTable::Lease& lease = table.entry_for(1 + way * kSets, at(0s));
    EXPECT_EQ(lease.key, 0U) << "a free entry first";
    lease.key = 1 + way * kSets;
    lease.left = 1;
    lease.until = at(std::chrono::seconds(10 - way));  // the last ends first
    leases.push_back(&lease);
  }
  for (const LeaseTable::Lease* lease : leases) {
    EXPECT_EQ(table.usable(lease->key, 1, at(1s)), lease);
  }
  EXPECT_EQ(&table.entry_for(1 + 4 * kSets, at(1s)), leases.back());
  leases[1]->left = 0;  // spent: free again, before any that holds permits
  EXPECT_EQ(&table.entry_for(1 + 4 * kSets, at(1s)), leases[1]);
}

}  // namespace
}  // namespace sluice::store::redis
