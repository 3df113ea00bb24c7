#pragma once

#include "limiter/clock.hpp"

namespace sluice::test {

/// A clock that moves only when told to. Starts on a minute boundary, so that windows of a
/// second, ten seconds or a minute all begin at start().
class ManualClock final : public limiter::Clock {
 public:
  static constexpr limiter::TimePoint start() noexcept {
    return limiter::TimePoint(std::chrono::seconds(1'699'999'980));  // multiple of 60 s
  }

  limiter::TimePoint now() const noexcept override { return now_; }
  void advance(limiter::Duration by) noexcept { now_ += by; }
  void set(limiter::TimePoint to) noexcept { now_ = to; }

 private:
  limiter::TimePoint now_ = start();
};

/// `offset` after ManualClock::start().
constexpr limiter::TimePoint at(limiter::Duration offset) noexcept {
  return ManualClock::start() + offset;
}

}  // namespace sluice::test
