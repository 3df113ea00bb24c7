#include "limiter/token_bucket.hpp"

#include <limits>

#include "limiter/validate.hpp"

namespace sluice::limiter {

TokenBucket::TokenBucket(TokenBucketOptions options) : options_(options), rate_(options.rate) {
  require_number_at_least("rate", options.rate.permits, std::numeric_limits<double>::min());
  require_positive("rate period", options.rate.period);
  require_number_at_least("burst", options.burst, 1.0);
}

Verdict TokenBucket::evaluate(const State& state, TimePoint now, Permits cost,
                              const Policy& policy) const noexcept {
  if (policy.mode == Mode::reject && cost > max_cost()) {
    return verdict_at(kNever, now, policy);
  }
  const double shortfall = state.at(now, rate_) + cost - options_.burst;
  if (shortfall <= kPermitTolerance) {
    return verdict_at(now, now, policy);
  }
  const Duration wait = rate_.time_for(shortfall);
  return verdict_at(saturating_add(now, wait), now, policy);
}

void TokenBucket::commit(State& state, TimePoint now, Permits cost,
                         Duration /*hold*/) const noexcept {
  state.add(now, cost, rate_);  // in delay mode the tokens go negative at once
}

Status TokenBucket::status(const State& state, TimePoint now) const noexcept {
  return state.status(now, options_.burst, rate_);
}

Permits TokenBucket::max_cost() const noexcept { return largest_cost(options_.burst); }

}  // namespace sluice::limiter
