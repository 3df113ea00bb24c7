#pragma once

#include "limiter/algorithm.hpp"
#include "limiter/draining_level.hpp"
#include "limiter/rate.hpp"

namespace sluice::limiter {

struct LeakyBucketOptions {
  Rate rate;
  double burst = 0;  ///< Requests accepted in excess of `rate`.
};

/// nginx limit_req (GCRA): the bucket holds up to burst + 1 requests and leaks at `rate`.
/// A request that would overflow it is rejected in both modes. Reject mode is nginx `nodelay`
/// (admitted at once); delay mode is nginx without `nodelay`: held until the requests before it
/// have leaked, (level before it)/rate, if that is within max_delay. With rate 10/s and burst 5,
/// six requests at once are admitted, then one per 100 ms.
class LeakyBucket {
 public:
  using State = DrainingLevel;

  explicit LeakyBucket(LeakyBucketOptions options);

  State fresh_state(TimePoint /*now*/) const noexcept { return {}; }
  Verdict evaluate(const State& state, TimePoint now, Permits cost,
                   const Policy& policy) const noexcept;
  void commit(State& state, TimePoint now, Permits cost, Duration hold) const noexcept;
  /// Gives back `cost` permits added at `taken_at` (an estimate the response came in under),
  /// less what may have leaked of them since (DrainingLevel::give_back).
  void refund(State& state, TimePoint taken_at, TimePoint now, Permits cost) const noexcept {
    state.give_back(taken_at, now, cost, rate_);
  }
  Status status(const State& state, TimePoint now) const noexcept;
  TimePoint fresh_at(const State& state, TimePoint /*now*/) const noexcept {
    return state.empty_at;
  }
  Permits max_cost() const noexcept;

 private:
  LeakyBucketOptions options_;
  RateFactors rate_;
  double capacity_;
};

}  // namespace sluice::limiter
