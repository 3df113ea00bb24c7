#pragma once

#include "limiter/time.hpp"

namespace sluice::limiter {

/// Source of "now" for the owners of limiters. Algorithms never read a clock: time is an
/// argument, so tests and `sluice replay` drive them with a simulated one.
class Clock {
 public:
  Clock() = default;
  Clock(const Clock&) = delete;
  Clock& operator=(const Clock&) = delete;
  Clock(Clock&&) = delete;
  Clock& operator=(Clock&&) = delete;
  virtual ~Clock() = default;

  /// Thread-safe.
  virtual TimePoint now() const noexcept = 0;
};

/// Wall time that never runs backwards: the monotonic clock, anchored to the Unix epoch once at
/// construction. An NTP step of the system clock therefore cannot rewind or jump a limiter.
class SystemClock final : public Clock {
 public:
  SystemClock() noexcept;
  TimePoint now() const noexcept override;

 private:
  Duration steady_to_epoch_;
};

}  // namespace sluice::limiter
