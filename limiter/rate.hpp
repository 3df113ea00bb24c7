#pragma once

#include "limiter/time.hpp"

namespace sluice::limiter {

/// `permits` per `period`, as written in the config (`10/s`, `5/200ms`).
struct Rate {
  double permits = 0;
  Duration period = std::chrono::seconds(1);

  bool operator==(const Rate&) const = default;

  double per_second() const noexcept { return permits * 1e9 / static_cast<double>(period.count()); }
  double per_nanosecond() const noexcept { return permits / static_cast<double>(period.count()); }
};

/// A rate as the two factors the hot path multiplies by (no division per decision).
struct RateFactors {
  double permits_per_ns = 0;
  double ns_per_permit = 0;

  explicit RateFactors(const Rate& rate) noexcept
      : permits_per_ns(rate.per_nanosecond()),
        ns_per_permit(static_cast<double>(rate.period.count()) / rate.permits) {}

  /// Permits produced over `elapsed`.
  double permits_in(Duration elapsed) const noexcept {
    return static_cast<double>(elapsed.count()) * permits_per_ns;
  }
  /// Time to produce `amount` permits, rounded up to whole nanoseconds.
  Duration time_for(double amount) const noexcept {
    return ceil_nanoseconds(amount * ns_per_permit);
  }
};

}  // namespace sluice::limiter
