#pragma once

#include <algorithm>

#include "limiter/rate.hpp"
#include "limiter/time.hpp"

namespace sluice::limiter {

/// An amount that drains at a constant rate: the permits drawn from a token bucket and not yet
/// refilled, or the water in a leaky bucket. 16 bytes; zero means fresh.
struct DrainingLevel {
  double level = 0;     ///< Permits, as of `updated`.
  TimePoint updated{};  ///< Last time permits were added.

  /// The level at `now`. A `now` before `updated` (a clock stepped back) drains nothing.
  double at(TimePoint now, const Rate& rate) const noexcept {
    if (level <= 0 || now <= updated) {
      return std::max(level, 0.0);
    }
    return std::max(level - rate.permits_in(now - updated), 0.0);
  }

  void add(TimePoint now, double permits, const Rate& rate) noexcept {
    level = at(now, rate) + permits;
    updated = std::max(updated, now);
  }

  /// When the level reaches zero again if nothing is added.
  TimePoint empty_at(const Rate& rate) const noexcept {
    if (level <= 0) {
      return kAlways;
    }
    return saturating_add(updated, ceil_nanoseconds(rate.nanoseconds_for(level)));
  }
};

/// Tolerance when comparing permit counts computed in floating point: 0.1 + 0.1 + ... may fall a
/// hair short of the whole permit that the arithmetic on paper produces. Far below one request.
inline constexpr double kPermitTolerance = 1e-9;

}  // namespace sluice::limiter
