#pragma once

#include <cstdint>
#include <limits>

#include "limiter/algorithm.hpp"

namespace sluice::limiter {

/// Sliding window counter (Cloudflare's approximation): with `elapsed` into the current
/// epoch-aligned window, estimate = previous·(1 − elapsed/window) + current, and a request is
/// admitted when estimate + cost <= limit. Two counters per key; no edge burst of 2x.
/// The comparison is done in integers (scaled by the window in ns), so worked examples such as
/// 9·(1 − 0.25) + 4 + 1 = 11.75 > 10 come out exactly.
class SlidingWindow {
 public:
  struct State {
    std::int64_t window = std::numeric_limits<std::int64_t>::min();  ///< Window of `current`.
    Permits previous = 0;  ///< Permits in window − 1.
    Permits current = 0;   ///< Permits in `window`.
  };

  explicit SlidingWindow(WindowOptions options);

  State fresh_state(TimePoint /*now*/) const noexcept { return {}; }
  Verdict evaluate(const State& state, TimePoint now, Permits cost,
                   const Policy& policy) const noexcept;
  void commit(State& state, TimePoint now, Permits cost, Duration hold) const noexcept;
  Status status(const State& state, TimePoint now) const noexcept;
  TimePoint fresh_at(const State& state) const noexcept;
  Permits max_cost() const noexcept { return options_.limit; }

 private:
  struct Counts {
    Permits previous = 0;
    Permits current = 0;
  };
  static Counts counts_in(const State& state, std::int64_t window) noexcept;
  TimePoint admission_time(const State& state, TimePoint now, Permits cost) const noexcept;

  WindowOptions options_;
};

}  // namespace sluice::limiter
