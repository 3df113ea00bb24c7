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
  /// Gives back `cost` tokens taken earlier (an estimate the response came in under).
  void refund(State& state, TimePoint /*taken_at*/, TimePoint now, Permits cost) const noexcept {
    state.remove(now, cost, rate_);
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
