#include "limiter/warming_bucket.hpp"

#include <algorithm>
#include <limits>

#include "limiter/validate.hpp"

namespace sluice::limiter {

WarmingBucket::WarmingBucket(WarmingBucketOptions options) {
  require_number_at_least("rate", options.rate.permits, std::numeric_limits<double>::min());
  require_positive("rate period", options.rate.period);
  require_positive("warmup", options.warmup);
  require_number_at_least("cold_factor", options.cold_factor, 1.0);
  const auto warmup_ns = static_cast<double>(options.warmup.count());
  stable_interval_ns_ = static_cast<double>(options.rate.period.count()) / options.rate.permits;
  const double cold_interval_ns = stable_interval_ns_ * options.cold_factor;
  threshold_permits_ = 0.5 * warmup_ns / stable_interval_ns_;
  max_permits_ = threshold_permits_ + 2.0 * warmup_ns / (stable_interval_ns_ + cold_interval_ns);
  slope_ = (cold_interval_ns - stable_interval_ns_) / (max_permits_ - threshold_permits_);
  cool_down_interval_ns_ = warmup_ns / max_permits_;
}

WarmingBucket::State WarmingBucket::resynced(State state, TimePoint now) const noexcept {
  if (now > state.next_free) {
    const double idle_permits =
        static_cast<double>((now - state.next_free).count()) / cool_down_interval_ns_;
    state.stored = std::min(max_permits_, state.stored + idle_permits);
    state.next_free = now;
  }
  return state;
}

double WarmingBucket::permits_to_interval(double permits) const noexcept {
  return stable_interval_ns_ + permits * slope_;
}

double WarmingBucket::stored_permits_wait(double stored, double taken) const noexcept {
  const double above_threshold = stored - threshold_permits_;
  double wait = 0;
  if (above_threshold > 0) {
    const double taken_above = std::min(above_threshold, taken);
    // Trapezoid between above_threshold − taken_above and above_threshold.
    const double length =
        permits_to_interval(above_threshold) + permits_to_interval(above_threshold - taken_above);
    wait = taken_above * length / 2.0;
    taken -= taken_above;
  }
  return wait + stable_interval_ns_ * taken;
}

Verdict WarmingBucket::evaluate(const State& state, TimePoint now, Permits /*cost*/,
                                const Policy& policy) const noexcept {
  return verdict_at(resynced(state, now).next_free, now, policy);
}

void WarmingBucket::commit(State& state, TimePoint now, Permits cost,
                           Duration /*hold*/) const noexcept {
  state = resynced(state, now);
  const double spent = std::min<double>(cost, state.stored);
  const double fresh = cost - spent;
  const double wait_ns = stored_permits_wait(state.stored, spent) + fresh * stable_interval_ns_;
  state.next_free = saturating_add(state.next_free, ceil_nanoseconds(wait_ns));
  state.stored -= spent;
}

Status WarmingBucket::status(const State& state, TimePoint now) const noexcept {
  const State current = resynced(state, now);
  // The next request always waits for the one before: one permit at most is free right now.
  if (current.next_free <= now) {
    return {.remaining = 1, .reset = Duration::zero()};
  }
  return {.remaining = 0, .reset = current.next_free - now};
}

TimePoint WarmingBucket::fresh_at(const State& state, TimePoint /*now*/) const noexcept {
  const double missing = std::max(0.0, max_permits_ - state.stored);
  return saturating_add(state.next_free, ceil_nanoseconds(missing * cool_down_interval_ns_));
}

Permits WarmingBucket::max_cost() const noexcept { return std::numeric_limits<Permits>::max(); }

}  // namespace sluice::limiter
