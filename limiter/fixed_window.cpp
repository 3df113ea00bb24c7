#include "limiter/fixed_window.hpp"

#include <algorithm>

#include "limiter/validate.hpp"

namespace sluice::limiter {

FixedWindow::FixedWindow(WindowOptions options)
    : options_(options),
      windows_(options.calendar == Calendar::none ? options.window : std::chrono::seconds(1)),
      calendar_(options.calendar, options.zone) {
  require_at_least("limit", options.limit, 1);
  if (options.calendar == Calendar::none) {
    require_positive("window", options.window);
  }
}

TimePoint FixedWindow::admission_time(const State& state, TimePoint now,
                                      Permits cost) const noexcept {
  if (cost > options_.limit) {
    return kNever;
  }
  std::int64_t window = index(now);
  std::uint64_t used = 0;
  if (state.count != 0) {
    // Arrival order: never admit before a window that already holds reservations.
    const std::int64_t counted = counted_window(state, window);
    if (counted >= window) {
      window = counted;
      used = state.count;
    }
  }
  if (used + cost > options_.limit) {
    ++window;  // cost <= limit, so the next window has room
  }
  return std::max(now, start(window));
}

Verdict FixedWindow::evaluate(const State& state, TimePoint now, Permits cost,
                              const Policy& policy) const noexcept {
  return verdict_at(admission_time(state, now, cost), now, policy);
}

void FixedWindow::commit(State& state, TimePoint now, Permits cost, Duration hold) const noexcept {
  // Most requests are not held: their window is now's, known before the state arrives.
  const std::int64_t window =
      hold == Duration::zero() ? index(now) : index(saturating_add(now, hold));
  if (state.count != 0 && counted_window(state, window) == window) {
    state.count = saturating_sum(state.count, cost);
  } else {
    state = {.window = static_cast<std::uint32_t>(window), .count = cost};
  }
}

Status FixedWindow::status(const State& state, TimePoint now) const noexcept {
  const std::int64_t current = index(now);
  std::int64_t window = current;
  Permits used = 0;
  if (state.count != 0 && counted_window(state, current) >= current) {
    window = counted_window(state, current);
    used = state.count;
  }
  return {.remaining = window == current ? options_.limit - std::min(used, options_.limit) : 0,
          .reset = start(window + 1) - now};
}

void FixedWindow::refund(State& state, TimePoint taken_at, TimePoint /*now*/,
                         Permits cost) const noexcept {
  const std::int64_t window = index(taken_at);
  if (state.count != 0 && counted_window(state, window) == window) {
    state.count -= std::min(state.count, cost);
  }
}

TimePoint FixedWindow::fresh_at(const State& state, TimePoint now) const noexcept {
  if (state.count == 0) {
    return kAlways;
  }
  return start(counted_window(state, index(now)) + 1);
}

}  // namespace sluice::limiter
