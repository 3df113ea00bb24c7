#pragma once

#include <time.h>

#include <chrono>

namespace sluice::io {

/// steady_clock's own clock (CLOCK_MONOTONIC) read with CLOCK_MONOTONIC_COARSE: a few
/// nanoseconds instead of a TSC read and its conversion, but only as fresh as the kernel's last
/// timekeeping update (a tick, or more on a tickless kernel whose CPUs were idle). For ages
/// measured between two of its own readings, such as how long a connection has been parked,
/// where milliseconds do not matter. Never for deadlines (one could end early), latencies or
/// the limiters.
struct CoarseClock {
  using time_point = std::chrono::steady_clock::time_point;

  static time_point now() noexcept {
    timespec at{};
    ::clock_gettime(CLOCK_MONOTONIC_COARSE, &at);
    return time_point(std::chrono::seconds(at.tv_sec) + std::chrono::nanoseconds(at.tv_nsec));
  }
};

}  // namespace sluice::io
