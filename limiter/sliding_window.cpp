#include "limiter/sliding_window.hpp"

#include <algorithm>

#include "limiter/draining_level.hpp"
#include "limiter/validate.hpp"

namespace sluice::limiter {
namespace {

__extension__ using Int128 = __int128;

}  // namespace

SlidingWindow::SlidingWindow(WindowOptions options)
    : options_(options),
      windows_(options.window),
      inverse_window_ns_(1.0 / static_cast<double>(options.window.count())) {
  require_at_least("limit", options.limit, 1);
  require_positive("window", options.window);
}

std::optional<std::int64_t> SlidingWindow::counted_window(const State& state,
                                                          std::int64_t current) noexcept {
  if (state.previous == 0 && state.current == 0) {
    return std::nullopt;
  }
  return unwrap_period(state.window, current);
}

SlidingWindow::Counts SlidingWindow::counts_in(const State& state, std::int64_t counted,
                                               std::int64_t window) noexcept {
  if (window == counted) {
    return {.previous = state.previous, .current = state.current};
  }
  if (window - 1 == counted) {
    return {.previous = state.current, .current = 0};
  }
  return {};
}

TimePoint SlidingWindow::admission_time(const State& state, TimePoint now,
                                        Permits cost) const noexcept {
  if (cost > options_.limit) {
    return kNever;
  }
  const std::int64_t length = options_.window.count();
  // The current window does not depend on the key's state, so it is computed while that state
  // is still on its way from memory.
  const std::int64_t current = windows_.index(now);
  const std::optional<std::int64_t> counted = counted_window(state, current);
  // Arrival order: never admit before a window that already holds reservations.
  TimePoint from = now;
  std::int64_t window = current;
  if (counted && *counted > current) {
    window = *counted;
    from = windows_.start(window);
  }
  // Two windows later every count has aged out, and cost <= limit fits.
  for (int step = 0; step < 3; ++step, ++window) {
    const Counts counts = counted ? counts_in(state, *counted, window) : Counts{};
    const TimePoint start = windows_.start(window);
    const std::int64_t earliest = step == 0 ? (from - start).count() : 0;
    if (static_cast<std::uint64_t>(counts.current) + cost > options_.limit) {
      continue;
    }
    // previous·(W − e) + (current + cost)·W <= limit·W  ⇔  e >= W·excess / previous.
    const std::int64_t excess =
        std::int64_t{counts.previous} + counts.current + cost - std::int64_t{options_.limit};
    std::int64_t needed = 0;
    if (excess > 0) {  // W·excess may pass 2^63: 128-bit, on this rarer path only
      needed = static_cast<std::int64_t>((Int128{excess} * length + counts.previous - 1) /
                                         counts.previous);
    }
    const std::int64_t elapsed = std::max(earliest, needed);
    if (elapsed < length) {
      return saturating_add(start, Duration(elapsed));
    }
  }
  return kNever;
}

Verdict SlidingWindow::evaluate(const State& state, TimePoint now, Permits cost,
                                const Policy& policy) const noexcept {
  return verdict_at(admission_time(state, now, cost), now, policy);
}

void SlidingWindow::commit(State& state, TimePoint now, Permits cost,
                           Duration hold) const noexcept {
  // Most requests are not held: their window is now's, known before the state arrives.
  const std::int64_t window =
      hold == Duration::zero() ? windows_.index(now) : windows_.index(saturating_add(now, hold));
  const std::optional<std::int64_t> counted = counted_window(state, window);
  const Counts counts = counted ? counts_in(state, *counted, window) : Counts{};
  state = {.window = static_cast<std::uint32_t>(window),
           .previous = counts.previous,
           .current = saturating_sum(counts.current, cost)};
}

void SlidingWindow::refund(State& state, TimePoint taken_at, TimePoint /*now*/,
                           Permits cost) const noexcept {
  const std::int64_t window = windows_.index(taken_at);
  const std::optional<std::int64_t> counted = counted_window(state, window);
  if (counted == window) {
    state.current -= std::min(state.current, cost);
  } else if (counted == window + 1) {
    state.previous -= std::min(state.previous, cost);
  }
}

Status SlidingWindow::status(const State& state, TimePoint now) const noexcept {
  const std::int64_t window = windows_.index(now);
  const std::optional<std::int64_t> found = counted_window(state, window);
  if (!found) {
    return {.remaining = options_.limit, .reset = Duration::zero()};
  }
  const std::int64_t counted = *found;
  const TimePoint reset_at = windows_.start(counted + (state.current != 0 ? 2 : 1));
  const Duration reset = reset_at > now ? reset_at - now : Duration::zero();
  if (counted > window) {
    return {.remaining = 0, .reset = reset};  // reservations are waiting: nothing left now
  }
  const Counts counts = counts_in(state, counted, window);
  // remaining = floor(limit − estimate). For headers only (admission is exact, in integers), so
  // a float with a tolerance for the last bit will do, and spares a division.
  const double left_of_previous =
      1.0 - static_cast<double>((now - windows_.start(window)).count()) * inverse_window_ns_;
  const double headroom = static_cast<double>(options_.limit) - counts.current -
                          counts.previous * left_of_previous + kPermitTolerance;
  return {.remaining = headroom > 0 ? static_cast<std::uint64_t>(headroom) : 0, .reset = reset};
}

TimePoint SlidingWindow::fresh_at(const State& state, TimePoint now) const noexcept {
  const std::optional<std::int64_t> counted = counted_window(state, windows_.index(now));
  if (!counted) {
    return kAlways;
  }
  return windows_.start(*counted + (state.current != 0 ? 2 : 1));
}

}  // namespace sluice::limiter
