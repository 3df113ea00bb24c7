#include "limiter/sliding_log.hpp"

#include <algorithm>
#include <bit>

#include "limiter/validate.hpp"

namespace sluice::limiter {
namespace {

std::int64_t timestamp_at(const SlidingLog::State& state, Permits index) noexcept {
  return state.times[(state.first + index) % state.capacity];
}

TimePoint newest(const SlidingLog::State& state) noexcept {
  return TimePoint(Duration(timestamp_at(state, state.size - 1)));
}

}  // namespace

SlidingLog::SlidingLog(WindowOptions options) : options_(options) {
  require_at_least("limit", options.limit, 1);
  require_positive("window", options.window);
}

Permits SlidingLog::first_inside(const State& state, TimePoint at, Duration window) noexcept {
  // A timestamp t counts at `at` while t > at − window. Timestamps are sorted: binary search.
  const std::int64_t cutoff = (at - window).time_since_epoch().count();
  Permits low = 0;
  Permits high = state.size;
  while (low < high) {
    const Permits middle = low + (high - low) / 2;
    if (timestamp_at(state, middle) <= cutoff) {
      low = middle + 1;
    } else {
      high = middle;
    }
  }
  return low;
}

TimePoint SlidingLog::admission_time(const State& state, TimePoint now,
                                     Permits cost) const noexcept {
  if (cost > options_.limit) {
    return kNever;
  }
  // Arrival order: never admit before a reservation already logged.
  const TimePoint from = state.size == 0 ? now : std::max(now, newest(state));
  const Permits inside_from = first_inside(state, from, options_.window);
  const std::uint64_t inside = state.size - inside_from;
  if (inside + cost <= options_.limit) {
    return from;
  }
  // The oldest `excess` timestamps must leave the window; timestamp t leaves at t + window.
  const std::uint64_t excess = inside + cost - options_.limit;
  const Permits last_to_leave = inside_from + static_cast<Permits>(excess - 1);
  return std::max(from, saturating_add(TimePoint(Duration(timestamp_at(state, last_to_leave))),
                                       options_.window));
}

Verdict SlidingLog::evaluate(const State& state, TimePoint now, Permits cost,
                             const Policy& policy) const noexcept {
  return verdict_at(admission_time(state, now, cost), now, policy);
}

void SlidingLog::reserve_room(State& state, Permits extra) const {
  const std::uint64_t needed = std::uint64_t{state.size} + extra;
  if (needed <= state.capacity) {
    return;
  }
  // Grow geometrically, never past the limit: admission keeps size + cost <= limit.
  const auto capacity = static_cast<Permits>(
      std::min<std::uint64_t>(std::max<std::uint64_t>(std::bit_ceil(needed), 4), options_.limit));
  auto times = std::make_unique_for_overwrite<std::int64_t[]>(capacity);
  for (Permits i = 0; i < state.size; ++i) {
    times[i] = timestamp_at(state, i);
  }
  state.times = std::move(times);
  state.capacity = capacity;
  state.first = 0;
}

void SlidingLog::commit(State& state, TimePoint now, Permits cost, Duration hold) const noexcept {
  const TimePoint at = saturating_add(now, hold);
  // Timestamps outside the window that ends at `at` can never count again.
  const Permits expired = first_inside(state, at, options_.window);
  if (expired != 0) {
    state.first = (state.first + expired) % state.capacity;
    state.size -= expired;
  }
  reserve_room(state, cost);
  const std::int64_t stamp = at.time_since_epoch().count();
  for (Permits i = 0; i < cost; ++i) {
    state.times[(state.first + state.size) % state.capacity] = stamp;
    ++state.size;
  }
}

void SlidingLog::charge(State& state, TimePoint now, Permits cost) const noexcept {
  const TimePoint at = state.size == 0 ? now : std::max(now, newest(state));
  const Permits inside = state.size - first_inside(state, at, options_.window);
  commit(state, at, std::min(cost, options_.limit - std::min(inside, options_.limit)),
         Duration::zero());
}

Status SlidingLog::status(const State& state, TimePoint now) const noexcept {
  if (state.size == 0) {
    return {.remaining = options_.limit, .reset = Duration::zero()};
  }
  const TimePoint reset_at = fresh_at(state, now);
  const Duration reset = reset_at > now ? reset_at - now : Duration::zero();
  if (newest(state) > now) {
    return {.remaining = 0, .reset = reset};  // reservations are waiting: nothing left now
  }
  const Permits inside = state.size - first_inside(state, now, options_.window);
  return {.remaining = options_.limit - std::min(inside, options_.limit), .reset = reset};
}

TimePoint SlidingLog::fresh_at(const State& state, TimePoint /*now*/) const noexcept {
  return state.size == 0 ? kAlways : saturating_add(newest(state), options_.window);
}

}  // namespace sluice::limiter
