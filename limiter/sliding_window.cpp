#include "limiter/sliding_window.hpp"

#include <algorithm>

#include "limiter/validate.hpp"

namespace sluice::limiter {
namespace {

__extension__ using Int128 = __int128;

}  // namespace

SlidingWindow::SlidingWindow(WindowOptions options) : options_(options) {
  require_at_least("limit", options.limit, 1);
  require_positive("window", options.window);
}

SlidingWindow::Counts SlidingWindow::counts_in(const State& state, std::int64_t window) noexcept {
  if (window == state.window) {
    return {.previous = state.previous, .current = state.current};
  }
  if (state.current != 0 && window - 1 == state.window) {
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
  // Arrival order: never admit before a window that already holds reservations.
  const TimePoint from = std::max(now, period_start(state.window, options_.window));
  std::int64_t window = period_index(from, options_.window);
  // Two windows later every count has aged out, and cost <= limit fits.
  for (int step = 0; step < 3; ++step, ++window) {
    const Counts counts = counts_in(state, window);
    const TimePoint start = period_start(window, options_.window);
    const std::int64_t earliest = step == 0 ? (from - start).count() : 0;
    if (static_cast<std::uint64_t>(counts.current) + cost > options_.limit) {
      continue;
    }
    // previous·(W − e) + (current + cost)·W <= limit·W  ⇔  e >= W·excess / previous.
    const Int128 excess =
        Int128{counts.previous} + counts.current + cost - Int128{options_.limit};
    std::int64_t needed = 0;
    if (excess > 0) {
      needed = static_cast<std::int64_t>((excess * length + counts.previous - 1) / counts.previous);
    }
    const std::int64_t elapsed = std::max(earliest, needed);
    if (elapsed < length) {
      return start + Duration(elapsed);
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
  const std::int64_t window = period_index(now + hold, options_.window);
  const Counts counts = counts_in(state, window);
  state = {.window = window, .previous = counts.previous, .current = counts.current + cost};
}

Status SlidingWindow::status(const State& state, TimePoint now) const noexcept {
  const TimePoint reset_at = fresh_at(state);
  const Duration reset = reset_at > now ? reset_at - now : Duration::zero();
  if (period_start(state.window, options_.window) > now) {
    return {.remaining = 0, .reset = reset};  // reservations are waiting: nothing left now
  }
  const std::int64_t window = period_index(now, options_.window);
  const Counts counts = counts_in(state, window);
  const std::int64_t length = options_.window.count();
  const std::int64_t elapsed = (now - period_start(window, options_.window)).count();
  // remaining = floor(limit − estimate), computed as floor((limit·W − estimate·W) / W).
  const Int128 headroom = (Int128{options_.limit} - counts.current) * length -
                          Int128{counts.previous} * (length - elapsed);
  return {.remaining = headroom > 0 ? static_cast<std::uint64_t>(headroom / length) : 0,
          .reset = reset};
}

TimePoint SlidingWindow::fresh_at(const State& state) const noexcept {
  if (state.current != 0) {
    return period_start(state.window + 2, options_.window);
  }
  if (state.previous != 0) {
    return period_start(state.window + 1, options_.window);
  }
  return kAlways;
}

}  // namespace sluice::limiter
