#include "limiter/clock.hpp"

#include <cmath>

namespace sluice::limiter {

SystemClock::SystemClock() noexcept
    : steady_to_epoch_(std::chrono::duration_cast<Duration>(
                           std::chrono::system_clock::now().time_since_epoch()) -
                       std::chrono::duration_cast<Duration>(
                           std::chrono::steady_clock::now().time_since_epoch())) {}

TimePoint SystemClock::now() const noexcept {
  return TimePoint(
      std::chrono::duration_cast<Duration>(std::chrono::steady_clock::now().time_since_epoch()) +
      steady_to_epoch_);
}

Duration ceil_nanoseconds(double nanoseconds) noexcept {
  if (!(nanoseconds > 0)) {  // also catches NaN
    return Duration::zero();
  }
  const double rounded = std::ceil(nanoseconds * (1 - 1e-12));
  if (rounded >= static_cast<double>(Duration::max().count())) {
    return Duration::max();
  }
  return Duration(static_cast<Duration::rep>(rounded));
}

}  // namespace sluice::limiter
