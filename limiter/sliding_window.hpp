#pragma once

#include <cstdint>
#include <optional>

#include "limiter/algorithm.hpp"
#include "limiter/periods.hpp"

namespace sluice::limiter {

/// Sliding window counter (Cloudflare's approximation): with `elapsed` into the current
/// epoch-aligned window, estimate = previous·(1 − elapsed/window) + current, and a request is
/// admitted when estimate + cost <= limit. Two counters per key; no edge burst of 2x.
/// The comparison is done in integers (scaled by the window in ns), so worked examples such as
/// 9·(1 − 0.25) + 4 + 1 = 11.75 > 10 come out exactly.
class SlidingWindow {
 public:
  /// 12 bytes. Both counts 0 means fresh, whatever `window` holds.
  struct State {
    std::uint32_t window = 0;  ///< Window of `current`, modulo 2^32 (see unwrap_period).
    Permits previous = 0;      ///< Permits in window − 1.
    Permits current = 0;       ///< Permits in `window`.
  };

  explicit SlidingWindow(WindowOptions options);

  State fresh_state(TimePoint /*now*/) const noexcept { return {}; }
  Verdict evaluate(const State& state, TimePoint now, Permits cost,
                   const Policy& policy) const noexcept;
  void commit(State& state, TimePoint now, Permits cost, Duration hold) const noexcept;
  /// Gives back `cost` permits taken at `taken_at`, from its window's count if the key still
  /// keeps it (as the current window or the one before).
  void refund(State& state, TimePoint taken_at, TimePoint now, Permits cost) const noexcept;
  Status status(const State& state, TimePoint now) const noexcept;
  TimePoint fresh_at(const State& state, TimePoint now) const noexcept;
  Permits max_cost() const noexcept { return options_.limit; }

 private:
  struct Counts {
    Permits previous = 0;
    Permits current = 0;
  };
  /// The counts as they stand in `window`, for a state whose window unwraps to `counted`.
  static Counts counts_in(const State& state, std::int64_t counted, std::int64_t window) noexcept;
  /// The window of `state.current`, unwrapped near `current`; nullopt for a fresh state.
  static std::optional<std::int64_t> counted_window(const State& state,
                                                    std::int64_t current) noexcept;
  TimePoint admission_time(const State& state, TimePoint now, Permits cost) const noexcept;

  WindowOptions options_;
  Periods windows_;
  double inverse_window_ns_;
};

}  // namespace sluice::limiter
