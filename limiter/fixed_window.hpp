#pragma once

#include <cstdint>
#include <limits>

#include "limiter/algorithm.hpp"

namespace sluice::limiter {

/// One counter per epoch-aligned window of `window`: admits while count + cost <= limit.
/// Cheap and exact per window, but lets up to 2x limit through across a window edge.
/// In delay mode a request that does not fit is held until the first window it fits in.
class FixedWindow {
 public:
  struct State {
    std::int64_t window = std::numeric_limits<std::int64_t>::min();  ///< Newest window counted.
    Permits count = 0;                                               ///< Permits in that window.
  };

  explicit FixedWindow(WindowOptions options);

  State fresh_state(TimePoint /*now*/) const noexcept { return {}; }
  Verdict evaluate(const State& state, TimePoint now, Permits cost,
                   const Policy& policy) const noexcept;
  void commit(State& state, TimePoint now, Permits cost, Duration hold) const noexcept;
  Status status(const State& state, TimePoint now) const noexcept;
  TimePoint fresh_at(const State& state) const noexcept;
  Permits max_cost() const noexcept { return options_.limit; }

 private:
  TimePoint admission_time(const State& state, TimePoint now, Permits cost) const noexcept;

  WindowOptions options_;
};

}  // namespace sluice::limiter
