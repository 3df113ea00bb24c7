#pragma once

#include "limiter/time.hpp"

namespace sluice::limiter {

/// `permits` per `period`, as written in the config (`10/s`, `5/200ms`). Kept as the pair, not
/// as a per-nanosecond float, so that whole refills (100 ms of 10/s) compute exactly.
struct Rate {
  double permits = 0;
  Duration period = std::chrono::seconds(1);

  /// Permits produced over `elapsed`.
  double permits_in(Duration elapsed) const noexcept {
    return static_cast<double>(elapsed.count()) * permits / static_cast<double>(period.count());
  }
  /// Nanoseconds needed to produce `amount` permits (fractional).
  double nanoseconds_for(double amount) const noexcept {
    return amount * static_cast<double>(period.count()) / permits;
  }
  double per_second() const noexcept {
    return permits * 1e9 / static_cast<double>(period.count());
  }
};

}  // namespace sluice::limiter
