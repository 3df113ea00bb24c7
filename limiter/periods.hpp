#pragma once

#include <cstdint>

#include "limiter/time.hpp"

namespace sluice::limiter {

/// Epoch-aligned periods of one length (windows, wheel buckets). Same answers as period_index()
/// and period_start(), but the index costs a multiply instead of a 64-bit division, which would
/// otherwise be the dearest instruction of a window decision.
class Periods {
 public:
  explicit Periods(Duration length) noexcept
      : length_(length.count()), inverse_(1.0 / static_cast<double>(length.count())) {}

  Duration length() const noexcept { return Duration(length_); }

  std::int64_t index(TimePoint t) const noexcept {
    const std::int64_t ns = t.time_since_epoch().count();
    // The float estimate is off by a period at most (for periods of more than a few ns);
    // the remainder, computed exactly in wrapping arithmetic, settles it.
    const double approximate = static_cast<double>(ns) * inverse_;
    if (!(approximate > -9e18 && approximate < 9e18)) {  // a cast would overflow: divide
      return period_index(t, Duration(length_));
    }
    auto estimate = static_cast<std::int64_t>(approximate);
    const auto remainder = static_cast<std::int64_t>(static_cast<std::uint64_t>(ns) -
                                                     static_cast<std::uint64_t>(estimate) *
                                                         static_cast<std::uint64_t>(length_));
    if (remainder < 0 || remainder >= length_) {
      estimate += period_index(TimePoint(Duration(remainder)), Duration(length_));
    }
    return estimate;
  }

  TimePoint start(std::int64_t index) const noexcept {
    return period_start(index, Duration(length_));
  }

 private:
  std::int64_t length_;
  double inverse_;
};

}  // namespace sluice::limiter
