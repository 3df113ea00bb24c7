#pragma once

#include <chrono>
#include <cstdint>
#include <limits>

namespace sluice::limiter {

/// Limiter time is nanoseconds since the Unix epoch, so that windows align to multiples of their
/// length since the epoch (SPEC §2) and replayed logs align exactly as live traffic does.
using Duration = std::chrono::nanoseconds;
using TimePoint = std::chrono::sys_time<Duration>;

/// "Never": a request that can never be admitted, a state that never becomes fresh.
inline constexpr TimePoint kNever = TimePoint::max();
/// "Always": a state that is already fresh.
inline constexpr TimePoint kAlways = TimePoint::min();

/// Index of the epoch-aligned period of length `period` that holds `t` (floor division).
constexpr std::int64_t period_index(TimePoint t, Duration period) noexcept {
  const std::int64_t ns = t.time_since_epoch().count();
  const std::int64_t length = period.count();
  const std::int64_t quotient = ns / length;
  return (ns % length != 0 && ns < 0) ? quotient - 1 : quotient;
}

/// Start of the epoch-aligned period `index`; saturates instead of overflowing.
constexpr TimePoint period_start(std::int64_t index, Duration period) noexcept {
  const std::int64_t length = period.count();
  if (index > std::numeric_limits<std::int64_t>::max() / length) {
    return kNever;
  }
  if (index < std::numeric_limits<std::int64_t>::min() / length) {
    return kAlways;
  }
  return TimePoint(Duration(index * length));
}

/// Period indexes stored in 32 bits (half the state of a window key): the full index that lies
/// within 2^31 periods of `near`. A key idle for 2^31 periods (68 years of 1 s windows) would be
/// misread, and only towards caution; idle keys are dropped long before that.
constexpr std::int64_t unwrap_period(std::uint32_t wrapped, std::int64_t near) noexcept {
  return near + static_cast<std::int32_t>(wrapped - static_cast<std::uint32_t>(near));
}

/// `t + d` that saturates at kNever instead of overflowing.
constexpr TimePoint saturating_add(TimePoint t, Duration d) noexcept {
  if (t == kNever || d.count() > (kNever - t).count()) {
    return kNever;
  }
  return t + d;
}

/// A duration from a (possibly fractional or huge) count of nanoseconds, rounded up so that a
/// hold or a retry-after is not cut short by rounding. A relative 1e-12 is forgiven first, so
/// that 1.0000000000000002 × 1e8 ns, the float image of exactly 100 ms, stays 100 ms.
Duration ceil_nanoseconds(double nanoseconds) noexcept;

}  // namespace sluice::limiter
