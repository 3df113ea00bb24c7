#pragma once

#include "limiter/algorithm.hpp"
#include "limiter/draining_level.hpp"
#include "limiter/rate.hpp"

namespace sluice::limiter {

struct TokenBucketOptions {
  Rate rate;
  double burst = 1;  ///< Capacity, and the tokens of a new key.
};

/// Token bucket: a new key starts full with `burst` tokens, refilled at `rate`. Reject mode admits
/// when tokens >= cost. Delay mode takes the tokens at once, going negative, and holds the
/// request (cost − tokens)/rate. The state is the tokens drawn and not yet refilled (16 bytes).
class TokenBucket {
 public:
  using State = DrainingLevel;

  explicit TokenBucket(TokenBucketOptions options);

  State fresh_state(TimePoint /*now*/) const noexcept { return {}; }
  Verdict evaluate(const State& state, TimePoint now, Permits cost,
                   const Policy& policy) const noexcept;
  void commit(State& state, TimePoint now, Permits cost, Duration hold) const noexcept;
  /// Gives back `cost` tokens taken at `taken_at` (an estimate the response came in under),
  /// less what may have refilled of them since (DrainingLevel::give_back).
  void refund(State& state, TimePoint taken_at, TimePoint now, Permits cost) const noexcept {
    state.give_back(taken_at, now, cost, rate_);
  }
  Status status(const State& state, TimePoint now) const noexcept;
  TimePoint fresh_at(const State& state, TimePoint /*now*/) const noexcept {
    return state.empty_at;
  }
  Permits max_cost() const noexcept;

 private:
  TokenBucketOptions options_;
  RateFactors rate_;
};

}  // namespace sluice::limiter
