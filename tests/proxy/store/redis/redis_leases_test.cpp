// Leases (`lease:` on a limiter with the Redis store): a lease's size and end, worked out in
// memory; then, against a real redis-server started by the test, the store taking, spending and
// giving them back, and counting the loops that hold them. The bound docs/operations.md declares
// (over any span, each replica spends at most one lease more than the limit lets through) is
// measured on a simulated clock, across two replicas and a reload.
#include "proxy/store/redis/redis_leases.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "tests/support/manual_clock.hpp"
#include "tests/support/redis_server.hpp"
#include "tests/support/redis_store_fixture.hpp"

namespace sluice::store::redis {
namespace {

using namespace std::chrono_literals;
using limiter::AlgorithmKind;
using limiter::TimePoint;
using test::at;
using test::Request;
using test::StoreFixture;

/// A limiter's configuration, leasing `lease` permits.
config::LimiterConfig leasing(std::uint64_t lease) {
  config::LimiterConfig limiter;
  limiter.name = "leased";
  limiter.lease = lease;
  return limiter;
}

limiter::LimiterOptions window_of(AlgorithmKind algorithm, std::uint64_t limit,
                                  limiter::Duration window) {
  limiter::LimiterOptions options;
  options.algorithm = algorithm;
  options.limit = limit;
  options.window = window;
  return options;
}

limiter::LimiterOptions bucket_of(AlgorithmKind algorithm, double per_second,
                                  std::optional<double> burst) {
  limiter::LimiterOptions options;
  options.algorithm = algorithm;
  options.rate = {.permits = per_second, .period = 1s};
  options.burst = burst;
  return options;
}

TEST(RedisLeases, ALeaseIsItsLimitersLeaseButNoMoreThanItsKeyHoldsAtOnce) {
  const auto hundred_a_minute = window_of(AlgorithmKind::fixed_window, 100, 1min);
  EXPECT_EQ(lease_size(leasing(0), hundred_a_minute), 0U);  // does not lease
  EXPECT_EQ(lease_size(leasing(10), hundred_a_minute), 10U);
  EXPECT_EQ(lease_size(leasing(500), hundred_a_minute), 100U);
  // A token bucket holds its burst (one second of rate without one), a leaky bucket its burst
  // and the one it drains.
  EXPECT_EQ(lease_size(leasing(10), bucket_of(AlgorithmKind::token_bucket, 10, 4)), 4U);
  EXPECT_EQ(lease_size(leasing(50), bucket_of(AlgorithmKind::token_bucket, 20, std::nullopt)), 20U);
  EXPECT_EQ(lease_size(leasing(10), bucket_of(AlgorithmKind::leaky_bucket, 10, 3)), 4U);
}

TEST(RedisLeases, AFixedWindowsLeaseEndsWithItsWindowABucketsOnceItWouldBeFullAgain) {
  const TimePoint now = at(10s);
  const limiter::Status status{.remaining = 50, .reset = 20s};
  EXPECT_EQ(lease_until(window_of(AlgorithmKind::fixed_window, 100, 1min), status, now), at(30s));
  EXPECT_EQ(lease_until(window_of(AlgorithmKind::sliding_log, 100, 1min), status, now), at(70s));
  // 4 tokens at 10/s refill in 400 ms; a leaky bucket of burst 3 drains 4 in 400 ms.
  EXPECT_EQ(lease_until(bucket_of(AlgorithmKind::token_bucket, 10, 4), status, now),
            at(10s + 400ms));
  EXPECT_EQ(lease_until(bucket_of(AlgorithmKind::leaky_bucket, 10, 3), status, now),
            at(10s + 400ms));
}

TEST(RedisLeases, TheFirstLoopToLeaseKeepsTheCountWhichNeverFallsBelowItsReplicasLoops) {
  LeaseHolders holders(42, 4);
  EXPECT_EQ(holders.count(), 0U);
  EXPECT_TRUE(holders.first_to_lease());
  EXPECT_FALSE(holders.first_to_lease());
  EXPECT_EQ(holders.count(), 4U);  // until the first beat, this replica's loops alone
  holders.counted(9);
  EXPECT_EQ(holders.count(), 9U);
  holders.counted(2);  // a heartbeat that has not counted this replica yet
  EXPECT_EQ(holders.count(), 4U);
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
