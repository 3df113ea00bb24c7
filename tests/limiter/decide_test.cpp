#include "limiter/decide.hpp"

#include <gtest/gtest.h>

#include <array>

#include "limiter/key_hash.hpp"
#include "limiter/make_limiter.hpp"
#include "tests/support/manual_clock.hpp"

namespace sluice::limiter {
namespace {

using namespace std::chrono_literals;
using test::at;

TEST(Decide, ARequestOneLimiterRefusesConsumesFromNone) {
  const auto per_ip =
      make_limiter({.algorithm = AlgorithmKind::fixed_window, .limit = 5, .window = 1min});
  const auto api_key = make_limiter({.algorithm = AlgorithmKind::token_bucket,
                                     .rate = {.permits = 1, .period = 1min},
                                     .burst = 2});
  const KeyHash ip = hash_key("203.0.113.9");
  const KeyHash token = hash_key("secret-token");
  const std::array<Charge, 2> charges{Charge{per_ip.get(), ip, 1}, Charge{api_key.get(), token, 1}};
  std::array<Outcome, 2> outcomes{};
  EXPECT_TRUE(decide(charges, at(0s), outcomes).admitted);
  EXPECT_TRUE(decide(charges, at(0s), outcomes).admitted);
  const Decision refused = decide(charges, at(0s), outcomes);
  EXPECT_FALSE(refused.admitted);
  EXPECT_EQ(refused.retry_after, 60s);          // api-key's next token
  EXPECT_TRUE(outcomes[0].verdict.admitted);    // per-ip would have let it through...
  EXPECT_EQ(outcomes[0].status.remaining, 3U);  // ...and was not charged for it
  EXPECT_FALSE(outcomes[1].verdict.admitted);   // api-key is the violated policy
  EXPECT_EQ(outcomes[1].status.remaining, 0U);
  EXPECT_EQ(per_ip->peek(ip, at(0s)).remaining, 3U);
}

TEST(Decide, HoldsForTheLongestDelay) {
  const auto shaped = make_limiter({.algorithm = AlgorithmKind::leaky_bucket,
                                    .rate = {.permits = 10, .period = 1s},
                                    .burst = 5,
                                    .policy = {.mode = Mode::delay, .max_delay = 1s}});
  const auto counted =
      make_limiter({.algorithm = AlgorithmKind::fixed_window, .limit = 100, .window = 1min});
  const KeyHash key = hash_key("k");
  const std::array<Charge, 2> charges{Charge{counted.get(), key, 1}, Charge{shaped.get(), key, 1}};
  std::array<Outcome, 2> outcomes{};
  EXPECT_EQ(decide(charges, at(0s), outcomes).hold, 0ms);
  EXPECT_EQ(decide(charges, at(0s), outcomes).hold, 100ms);
  const Decision third = decide(charges, at(0s), outcomes);
  EXPECT_TRUE(third.admitted);
  EXPECT_EQ(third.hold, 200ms);
  EXPECT_EQ(outcomes[0].status.remaining, 97U);
}

TEST(Decide, NoLimitersMeansAdmitted) {
  std::array<Outcome, 1> outcomes{};
  EXPECT_TRUE(decide({}, at(0s), outcomes).admitted);
}

/// A charge settled after the response is admitted if its cost fits, and consumes only what it
/// reserves: nothing (count_if, a cost from the response without an estimate) or its estimate.
TEST(Decide, AChargeSettledLaterConsumesOnlyItsReserve) {
  const auto bucket = make_limiter({.algorithm = AlgorithmKind::token_bucket,
                                    .rate = {.permits = 1, .period = 1min},
                                    .burst = 10});
  const KeyHash key = hash_key("caller");
  std::array<Outcome, 1> outcome{};
  const std::array<Charge, 1> checked{
      Charge{.limiter = bucket.get(), .key = key, .cost = 1, .settled_later = true}};
  EXPECT_TRUE(decide(checked, at(0s), outcome).admitted);
  EXPECT_EQ(outcome[0].status.remaining, 10U);
  const std::array<Charge, 1> reserved{
      Charge{.limiter = bucket.get(), .key = key, .cost = 4, .settled_later = true, .reserve = 4}};
  EXPECT_TRUE(decide(reserved, at(0s), outcome).admitted);
  EXPECT_EQ(outcome[0].status.remaining, 6U);
  bucket->charge(key, at(0s), 6);
  EXPECT_FALSE(decide(checked, at(0s), outcome).admitted);
  EXPECT_EQ(outcome[0].verdict.retry_after, 1min);
}

}  // namespace
}  // namespace sluice::limiter
