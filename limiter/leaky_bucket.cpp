#include "limiter/leaky_bucket.hpp"

#include <limits>

#include "limiter/validate.hpp"

namespace sluice::limiter {

LeakyBucket::LeakyBucket(LeakyBucketOptions options)
    : options_(options), rate_(options.rate), capacity_(options.burst + 1) {
  require_number_at_least("rate", options.rate.permits, std::numeric_limits<double>::min());
  require_positive("rate period", options.rate.period);
  require_number_at_least("burst", options.burst, 0.0);
}

Verdict LeakyBucket::evaluate(const State& state, TimePoint now, Permits cost,
                              const Policy& policy) const noexcept {
  if (cost > max_cost()) {
    return verdict_at(kNever, now, policy);
  }
  const double level = state.at(now, rate_);
  const double overflow = level + cost - capacity_;
  if (overflow > kPermitTolerance) {
    // Rejected in both modes, as nginx does when excess > burst.
    const Duration wait = rate_.time_for(overflow);
    return {.admitted = false, .hold = {}, .retry_after = wait};
  }
  if (policy.mode == Mode::reject) {
    return verdict_at(now, now, policy);
  }
  const Duration wait = rate_.time_for(level);
  return verdict_at(saturating_add(now, wait), now, policy);
}

void LeakyBucket::commit(State& state, TimePoint now, Permits cost,
                         Duration /*hold*/) const noexcept {
  state.add(now, cost, rate_);
}

Status LeakyBucket::status(const State& state, TimePoint now) const noexcept {
  return state.status(now, capacity_, rate_);
}

Permits LeakyBucket::max_cost() const noexcept { return largest_cost(capacity_); }

}  // namespace sluice::limiter
