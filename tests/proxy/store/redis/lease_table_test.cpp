// Leases (`lease:` on a limiter with the Redis store): the table a loop keeps them in, and the
// store that takes, spends and gives them back, against a real redis-server started by the test.
// The bound docs/operations.md declares (over any span, each replica spends at most one lease more
// than the limit lets through) is measured on a simulated clock, across two replicas and a reload.
#include "proxy/store/redis/lease_table.hpp"

#include <gtest/gtest.h>

#include <deque>
#include <vector>

#include "tests/support/redis_server.hpp"
#include "tests/support/redis_store_fixture.hpp"

namespace sluice::store::redis {
namespace {

using namespace std::chrono_literals;
using limiter::TimePoint;
using test::at;
using test::Request;
using test::StoreFixture;

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

std::string leased(const std::string& limiter) {
  return "upstream: http://127.0.0.1:9000\nlimiters:\n  leased: {" + limiter +
         "}\nroutes: [{name: api, limiters: [leased]}]\n";
}

/// A fixed window of 100 a day for everyone, leased 10 at a time.
const std::string kLeasedWindow =
    leased("algorithm: fixed_window, limit: 100, window: 1d, key: global, lease: 10");

std::string store_at(const test::RedisServer& server) { return "url: \"" + server.url() + "\""; }

bool allowed(const pipeline::Decision& decision) {
  return decision.outcome == pipeline::Outcome::allowed;
}

TEST(Leases, OneReplicaAdmitsExactlyTheLimitMostlyWithoutARoundTrip) {
  const test::RedisServer server;
  StoreFixture fixture(kLeasedWindow, store_at(server));
  int admitted = 0;
  for (int i = 0; i < 150; ++i) {
    admitted += allowed(fixture.redis(Request{}, std::nullopt)) ? 1 : 0;
  }
  EXPECT_EQ(admitted, 100);  // near the limit, leases give way to exact decisions
  const auto health = fixture.store().health();
  // Leases of 10 taken with requests 1, 12, …, 89 (11 permits each); the 100th and the 101st
  // each ask for a lease, are refused, and are decided exactly (2 calls each); the refusals
  // after them come from the over-limit cache.
  EXPECT_EQ(fixture.store().leases_taken(), 9U);
  EXPECT_EQ(fixture.store().lease_hits(), 90U);
  EXPECT_EQ(health->calls, 9U + 2 + 2);
}

TEST(Leases, WhatIsLeftIsGivenBackForTheOtherReplicas) {
  const test::RedisServer server;
  StoreFixture first(kLeasedWindow, store_at(server));
  ASSERT_TRUE(allowed(first.redis(Request{}, std::nullopt)));  // and a lease of 10 taken
  first.loop().run([&] { return first.store().give_back(0); });
  StoreFixture second(kLeasedWindow, store_at(server));
  int admitted = 0;
  for (int i = 0; i < 120; ++i) {
    admitted += allowed(second.redis(Request{}, std::nullopt)) ? 1 : 0;
  }
  EXPECT_EQ(admitted, 99);  // without the give-back, 89
}

TEST(Leases, ReplicasThatLeaseCountTheirLoopsInRedisForTheBound) {
  const test::RedisServer server;
  StoreFixture first(kLeasedWindow, store_at(server));
  StoreFixture second(kLeasedWindow, store_at(server));
  EXPECT_EQ(first.store().lease_holders(), 0U);  // not counted before it leases
  ASSERT_TRUE(allowed(first.redis(Request{}, std::nullopt)));
  ASSERT_TRUE(allowed(second.redis(Request{}, std::nullopt)));
  const auto deadline = std::chrono::steady_clock::now() + 5s;
  while (second.store().lease_holders() != 2 && std::chrono::steady_clock::now() < deadline) {
    second.loop().run_for(10ms);  // its first heartbeat, which counts both
  }
  EXPECT_EQ(second.store().lease_holders(), 2U);
}

/// Two replicas on a simulated clock, a token bucket leased by both, and a reload of one of them
/// halfway: over every span of the traffic, the permits admitted never exceed what the bucket
/// lets through (burst + rate × span) by more than the declared bound, replicas × lease.
TEST(Leases, TwoReplicasNeverOvershootTheDeclaredBoundAcrossAReload) {
  const test::RedisServer server;
  constexpr double kBurst = 100;
  constexpr double kRate = 1000;  // per second
  constexpr double kLease = 20;
  const std::string yaml =
      leased("algorithm: token_bucket, rate: 1000/s, burst: 100, key: global, lease: 20");
  StoreFixture a(yaml, store_at(server));
  StoreFixture b(yaml, store_at(server));
  std::vector<TimePoint> admitted_at;
  TimePoint now = at(0s);
  std::uint64_t hits_before_reload = 0;
  for (int i = 0; i < 1500; ++i) {  // about 1.6 s
    // Spans of 250 requests under the rate (about 530/s, in bursts of 10), then above it
    // (3,300/s), where leases give way to exact decisions.
    now += (i / 250) % 2 == 0 ? (i % 40 < 10 ? 50us : 2500us) : 300us;
    if (i == 600) {
      a.reload();
      hits_before_reload = a.store().lease_hits();
    }
    StoreFixture& replica = i % 3 == 0 ? b : a;
    if (allowed(replica.redis(Request{}, now))) {
      admitted_at.push_back(now);
    }
  }
  double worst = 0;  // admitted beyond burst + rate × span, over every span
  for (std::size_t first = 0; first < admitted_at.size(); ++first) {
    for (std::size_t last = first; last < admitted_at.size(); ++last) {
      const double span =
          std::chrono::duration<double>(admitted_at[last] - admitted_at[first]).count();
      worst = std::max(worst, static_cast<double>(last - first + 1) - kBurst - kRate * span);
    }
  }
  std::printf("admitted %zu in %.1f s; worst overshoot over a span %.2f (declared bound %.0f)\n",
              admitted_at.size(), std::chrono::duration<double>(now - at(0s)).count(), worst,
              2 * kLease);
  EXPECT_LE(worst, 2 * kLease + 1e-9);
  EXPECT_GT(a.store().lease_hits() + b.store().lease_hits(), admitted_at.size() / 4);
  EXPECT_GT(a.store().lease_hits(), hits_before_reload + 100);  // leases outlive a reload
  EXPECT_LT(admitted_at.size(), 1500U);  // some were refused: the bound was tested at the limit
}

}  // namespace
}  // namespace sluice::store::redis
