#pragma once

#include <cstdint>

#include "limiter/algorithm.hpp"
#include "limiter/periods.hpp"

namespace sluice::limiter {

/// One counter per epoch-aligned window of `window`, or per calendar period (`calendar`: a day,
/// week, month or year in a time zone): admits while count + cost <= limit.
/// Cheap and exact per window, but lets up to 2x limit through across a window edge.
/// In delay mode a request that does not fit is held until the first window it fits in.
class FixedWindow {
 public:
  /// 8 bytes. `count` 0 means fresh, whatever `window` holds.
  struct State {
    std::uint32_t window = 0;  ///< Newest window counted, modulo 2^32 (see unwrap_period).
    Permits count = 0;         ///< Permits in that window.
  };

  explicit FixedWindow(WindowOptions options);

  State fresh_state(TimePoint /*now*/) const noexcept { return {}; }
  Verdict evaluate(const State& state, TimePoint now, Permits cost,
                   const Policy& policy) const noexcept;
  void commit(State& state, TimePoint now, Permits cost, Duration hold) const noexcept;
  /// Gives back `cost` permits taken at `taken_at`, if its window is still the key's.
  void refund(State& state, TimePoint taken_at, TimePoint now, Permits cost) const noexcept;
  Status status(const State& state, TimePoint now) const noexcept;
  TimePoint fresh_at(const State& state, TimePoint now) const noexcept;
  Permits max_cost() const noexcept { return options_.limit; }

 private:
  TimePoint admission_time(const State& state, TimePoint now, Permits cost) const noexcept;
  /// The window `state` counts in, unwrapped near `current`.
  static std::int64_t counted_window(const State& state, std::int64_t current) noexcept {
    return unwrap_period(state.window, current);
  }

  /// The window holding `t`, and where window `index` starts: epoch-aligned or calendar.
  std::int64_t index(TimePoint t) const noexcept {
    return options_.calendar == Calendar::none ? windows_.index(t) : calendar_.index(t);
  }
  TimePoint start(std::int64_t window) const noexcept {
    return options_.calendar == Calendar::none ? windows_.start(window) : calendar_.start(window);
  }

  WindowOptions options_;
  Periods windows_;
  CalendarPeriods calendar_;
};

}  // namespace sluice::limiter
