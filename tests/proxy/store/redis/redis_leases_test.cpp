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

#include "tests/proxy/store/redis/redis_test_helpers.hpp"
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

TEST(RedisLeases, AFixedWindowsLeaseEndsWithItsWindowAnotherWhenSpent) {
  const TimePoint now = at(10s);
  const limiter::Status status{.remaining = 50, .reset = 20s};
  EXPECT_EQ(lease_until(window_of(AlgorithmKind::fixed_window, 100, 1min), status, now), at(30s));
  // However old, a lease holds at most its permits: the bound needs no end for the others.
  EXPECT_EQ(lease_until(window_of(AlgorithmKind::sliding_log, 100, 1min), status, now),
            limiter::kNever);
  EXPECT_EQ(lease_until(window_of(AlgorithmKind::sliding_window, 100, 1min), status, now),
            limiter::kNever);
  EXPECT_EQ(lease_until(bucket_of(AlgorithmKind::token_bucket, 10, 4), status, now),
            limiter::kNever);
  EXPECT_EQ(lease_until(bucket_of(AlgorithmKind::leaky_bucket, 10, 3), status, now),
            limiter::kNever);
}

/// One loop's leases of a fixed window of 100 a minute, leasing 10, and one request of it:
/// leases taken, spent and renewed by hand, with the answers Redis would give.
class RenewedLease : public ::testing::Test {
 protected:
  void SetUp() override {
    parts_.open();
    decision_.reports[0].limiter = &limiter_;
    decision_.report_count = 1;
    charges_.count = 1;
    charges_.live = 1;
    charges_.options[0] = &options_;
    charges_.items[0].cost = 1;
    charges_.shared_key[0] = 42;
  }

  /// Takes a lease of 10 with a request at `now`, which Redis admits leaving `remaining`.
  void take(TimePoint now, limiter::Permits remaining, limiter::Duration reset) {
    pipeline::Charges topped;
    TopUps added{};
    ASSERT_TRUE(leases().top_ups(decision_, charges_, now, topped, added));
    ASSERT_EQ(added[0], 10U);
    pipeline::ChargeResult taken;
    taken.live_admitted = true;
    taken.outcomes[0] = {.verdict = {.admitted = true, .hold = {}, .retry_after = {}},
                         .status = {.remaining = remaining, .reset = reset}};
    taken.decided_at[0] = microseconds(now);
    taken.store_permit = 1;
    leases().grant(decision_, charges_, added, taken, now);
  }
  /// A request at `now` from the lease: its status, or nullopt when the lease cannot admit it.
  std::optional<limiter::Status> spend(TimePoint now) {
    pipeline::ChargeResult result;
    if (!leases().answer(decision_, charges_, key_ids(decision_, charges_), now, result)) {
      return std::nullopt;
    }
    return result.outcomes[0].status;
  }
  /// Redis's answer to the renewal of 5 asked at `sent_at`: decided at `decided_at`, leaving
  /// `remaining`, `reset` before the window ends.
  void renewed(TimePoint sent_at, TimePoint decided_at, limiter::Permits remaining,
               limiter::Duration reset) {
    leases().renewed({.sink = &leases(),
                      .key = redis_key_id(limiter_.name, options_, 42),
                      .amount = 5,
                      .sent_at = sent_at,
                      .permit = 2,
                      .admitted = true,
                      .status = {.remaining = remaining, .reset = reset},
                      .decided_at = microseconds(decided_at)});
  }
  RedisLeases& leases() { return parts_.loop.leases; }

 private:
  static std::int64_t microseconds(TimePoint t) {
    return std::chrono::duration_cast<std::chrono::microseconds>(t.time_since_epoch()).count();
  }

  const test::RedisServer server_;
  test::LoopParts parts_{"url: \"" + server_.url() + "\""};
  config::LimiterConfig limiter_ = leasing(10);
  limiter::LimiterOptions options_ = window_of(AlgorithmKind::fixed_window, 100, 1min);
  pipeline::Decision decision_;
  pipeline::Charges charges_;
};

TEST_F(RenewedLease, InTheSameWindowItTopsTheLeaseUpToItsSize) {
  take(at(50s), 89, 10s);
  for (int i = 0; i < 5; ++i) {
    ASSERT_TRUE(spend(at(59s)));  // the fifth leaves it at half: a renewal of 5 goes out
  }
  renewed(at(59s), at(59s + 500ms), 84, 500ms);
  // What was left and what came: 10, of which this request takes 1; Redis's remaining beside.
  const auto status = spend(at(59s + 600ms));
  ASSERT_TRUE(status);
  EXPECT_EQ(status->remaining, 84U + 9);
  EXPECT_FALSE(spend(at(60s)));  // a fixed window's lease ends with its window
}

TEST_F(RenewedLease, DecidedInTheNextWindowItReplacesWhatIsLeft) {
  take(at(50s), 89, 10s);
  for (int i = 0; i < 5; ++i) {
    ASSERT_TRUE(spend(at(59s)));
  }
  renewed(at(59s), at(61s), 95, 59s);
  // The first window's 5 are not spent in the second: the renewal's alone.
  for (int i = 0; i < 5; ++i) {
    const auto status = spend(at(61s));
    ASSERT_TRUE(status) << i;
    EXPECT_EQ(status->remaining, 95U + (4 - static_cast<unsigned>(i)));
  }
  EXPECT_FALSE(spend(at(61s)));
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
  // A lease of 10 taken with the first request (11 permits), renewed by 5 or so whenever it is
  // down to half, in the background (how many depends on when each renewal's answer is read,
  // between requests); near the limit a renewal is refused, the lease runs out, the requests
  // after it are decided exactly, and the refusals after them come from the over-limit cache.
  EXPECT_GE(fixture.store().lease_hits(), 90U);
  EXPECT_LE(fixture.store().health()->calls, 30U);  // of 150 requests
}

/// Runs `fixture`'s loop until `done()` (at most 5 s): for background work such as a renewal.
template <class Done>
void run_until(StoreFixture& fixture, Done done) {
  const auto deadline = std::chrono::steady_clock::now() + 5s;
  while (!done() && std::chrono::steady_clock::now() < deadline) {
    fixture.loop().run_for(1ms);
  }
}

TEST(Leases, ALeaseIsRenewedAtHalfSoThatNoRequestWaitsForOne) {
  const test::RedisServer server;
  StoreFixture fixture(
      leased("algorithm: token_bucket, rate: 1000/s, burst: 1000, key: global, lease: 10"),
      store_at(server));
  const TimePoint now = at(0s);  // no refill: Redis's count is what was taken
  for (std::size_t i = 0; i < 51; ++i) {
    ASSERT_TRUE(allowed(fixture.redis(Request{}, now))) << "request " << i;
    // The first takes 1 + 10; every fifth after it leaves the lease at half, and renews it
    // with 5 in the background.
    run_until(fixture, [&] { return fixture.store().leases_taken() == 1 + i / 5; });
    ASSERT_EQ(fixture.store().leases_taken(), 1 + i / 5) << "request " << i;
  }
  EXPECT_EQ(fixture.store().lease_hits(), 50U);  // every request after the first
  EXPECT_EQ(fixture.store().health()->calls, 11U);
  // Taken in Redis: 11, then 10 renewals of 5; the lease holds 10 of them.
  const pipeline::Decision exact = fixture.redis(Request{}, now, 1000);
  EXPECT_FALSE(allowed(exact));
  EXPECT_EQ(exact.reports[0].status.remaining, 1000U - 61);
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
