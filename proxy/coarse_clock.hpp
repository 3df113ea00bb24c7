#pragma once

#include <time.h>

#include <chrono>

namespace sluice::proxy {

/// steady_clock's own clock (CLOCK_MONOTONIC) read at the kernel tick's resolution (1 to 4 ms)
/// with CLOCK_MONOTONIC_COARSE, which costs a few nanoseconds where a full read costs a TSC
/// read and its conversion. A forwarded request sets two deadlines and parks a connection: for
/// those, a millisecond or two does not matter. Latencies and the limiters use the full clock.
struct CoarseClock {
  using time_point = std::chrono::steady_clock::time_point;

  /// Never later than steady_clock::now(), and at most resolution() earlier.
  static time_point now() noexcept {
    timespec at{};
    ::clock_gettime(CLOCK_MONOTONIC_COARSE, &at);
    return time_point(std::chrono::seconds(at.tv_sec) + std::chrono::nanoseconds(at.tv_nsec));
  }

  /// The tick: add it to a deadline computed from now() to never end it early.
  static std::chrono::nanoseconds resolution() noexcept {
    static const std::chrono::nanoseconds tick = [] {
      timespec resolution{};
      ::clock_getres(CLOCK_MONOTONIC_COARSE, &resolution);
      return std::chrono::seconds(resolution.tv_sec) + std::chrono::nanoseconds(resolution.tv_nsec);
    }();
    return tick;
  }
};

}  // namespace sluice::proxy
