#include "limiter/token_bucket.hpp"

#include <cmath>
#include <limits>

#include "limiter/validate.hpp"

namespace sluice::limiter {

TokenBucket::TokenBucket(TokenBucketOptions options)
    : options_(options), rate_(options.rate) {
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
  const double drawn = state.at(now, rate_);
  const double tokens = options_.burst - drawn;
  return {.remaining = tokens > 0 ? static_cast<std::uint64_t>(tokens + kPermitTolerance) : 0,
          .reset = rate_.time_for(drawn)};
}

Permits TokenBucket::max_cost() const noexcept {
  const double whole = std::floor(options_.burst + kPermitTolerance);
  return whole >= std::numeric_limits<Permits>::max() ? std::numeric_limits<Permits>::max()
                                                       : static_cast<Permits>(whole);
}

}  // namespace sluice::limiter
