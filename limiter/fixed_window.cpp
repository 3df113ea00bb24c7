#include "limiter/fixed_window.hpp"

#include <algorithm>

#include "limiter/validate.hpp"

namespace sluice::limiter {

FixedWindow::FixedWindow(WindowOptions options) : options_(options) {
  require_at_least("limit", options.limit, 1);
  require_positive("window", options.window);
}

TimePoint FixedWindow::admission_time(const State& state, TimePoint now,
                                      Permits cost) const noexcept {
  if (cost > options_.limit) {
    return kNever;
  }
  // Arrival order: never admit before a window that already holds reservations.
  std::int64_t window = std::max(period_index(now, options_.window), state.window);
  const std::uint64_t used = window == state.window ? state.count : 0;
  if (used + cost > options_.limit) {
    ++window;  // cost <= limit, so the next window has room
  }
  return std::max(now, period_start(window, options_.window));
}

Verdict FixedWindow::evaluate(const State& state, TimePoint now, Permits cost,
                              const Policy& policy) const noexcept {
  return verdict_at(admission_time(state, now, cost), now, policy);
}

void FixedWindow::commit(State& state, TimePoint now, Permits cost, Duration hold) const noexcept {
  const std::int64_t window = period_index(now + hold, options_.window);
  if (window == state.window) {
    state.count += cost;
  } else {
    state = {.window = window, .count = cost};
  }
}

Status FixedWindow::status(const State& state, TimePoint now) const noexcept {
  const std::int64_t current = period_index(now, options_.window);
  const std::int64_t window = std::max(current, state.window);
  const Permits used = window == state.window ? state.count : 0;
  return {.remaining = window == current ? options_.limit - used : 0,
          .reset = period_start(window + 1, options_.window) - now};
}

TimePoint FixedWindow::fresh_at(const State& state) const noexcept {
  return state.count == 0 ? kAlways : period_start(state.window + 1, options_.window);
}

}  // namespace sluice::limiter
