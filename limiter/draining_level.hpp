#pragma once

#include <algorithm>

#include "limiter/rate.hpp"
#include "limiter/time.hpp"
#include "limiter/verdict.hpp"

namespace sluice::limiter {

/// An amount that drains at a constant rate: the permits drawn from a token bucket and not yet
/// refilled, or the water in a leaky bucket. Kept as the time it will have drained away (GCRA's
/// theoretical arrival time): one 8-byte integer, exact in nanoseconds. The epoch means fresh.
struct DrainingLevel {
  TimePoint empty_at{};

  /// The level at `now`. A `now` before the last update (a clock stepped back) finds the level
  /// higher, never lower: it can only make a limiter stricter.
  double at(TimePoint now, const RateFactors& rate) const noexcept {
    return empty_at > now ? rate.permits_in(empty_at - now) : 0.0;
  }

  void add(TimePoint now, double permits, const RateFactors& rate) noexcept {
    empty_at = saturating_add(std::max(empty_at, now), rate.time_for(permits));
  }

  /// Gives back `permits` added at `taken_at`, as though they drained first: what may have
  /// drained of them by `now` is not given back, so a level that emptied in between (and took
  /// them with it) gets nothing it never held. Never below empty.
  void give_back(TimePoint taken_at, TimePoint now, double permits,
                 const RateFactors& rate) noexcept {
    const Duration back = rate.time_for(permits) - std::max(now - taken_at, Duration::zero());
    if (back > Duration::zero() && empty_at > now) {
      empty_at = empty_at - now > back ? empty_at - back : now;
    }
  }

  /// Headers' view of a bucket of `capacity` permits at this level: whole permits of room left,
  /// and the time until it is empty again.
  Status status(TimePoint now, double capacity, const RateFactors& rate) const noexcept;
};

/// The largest whole cost that fits in `capacity` permits.
Permits largest_cost(double capacity) noexcept;

/// Tolerance when comparing permit counts computed in floating point: 0.1 + 0.1 + ... may fall a
/// hair short of the whole permit that the arithmetic on paper produces. Far below one request.
inline constexpr double kPermitTolerance = 1e-9;

}  // namespace sluice::limiter
