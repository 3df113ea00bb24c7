#include "limiter/time_wheel.hpp"

#include <algorithm>
#include <stdexcept>

#include "limiter/validate.hpp"

namespace sluice::limiter {

TimeWheel::TimeWheel(WheelOptions options) : options_(options), buckets_(Duration(1)) {
  require_at_least("limit", options.limit, 1);
  require_positive("window", options.window);
  require_at_least("slots", options.slots, 1);
  if (options.window.count() % options.slots != 0) {
    throw std::invalid_argument("window must be a whole number of slots, got window " +
                                format_duration(options.window) + " for " +
                                std::to_string(options.slots) + " slots");
  }
  buckets_ = Periods(options.window / options.slots);
}

std::size_t TimeWheel::slot_of(std::int64_t bucket) const noexcept {
  const std::int64_t slots = options_.slots;
  return static_cast<std::size_t>(((bucket % slots) + slots) % slots);
}

Permits TimeWheel::count_of(const State& state, std::int64_t bucket) const noexcept {
  if (!state.buckets || bucket > state.head || bucket <= state.head - options_.slots) {
    return 0;
  }
  return state.buckets[slot_of(bucket)];
}

std::uint64_t TimeWheel::sum_ending_at(const State& state, std::int64_t bucket) const noexcept {
  if (!state.buckets || bucket - options_.slots >= state.head) {
    return 0;
  }
  if (bucket == state.head) {
    return state.total;
  }
  std::uint64_t sum = 0;
  for (std::int64_t b = bucket - options_.slots + 1; b <= bucket; ++b) {
    sum += count_of(state, b);
  }
  return sum;
}

TimePoint TimeWheel::admission_time(const State& state, TimePoint now,
                                    Permits cost) const noexcept {
  if (cost > options_.limit) {
    return kNever;
  }
  // Arrival order: never admit before a bucket that already holds reservations.
  std::int64_t bucket = std::max(buckets_.index(now), state.head);
  std::uint64_t sum = sum_ending_at(state, bucket);
  // Each step lets the oldest bucket leave the window; after `slots` steps the sum is 0.
  while (sum + cost > options_.limit) {
    sum -= count_of(state, bucket - options_.slots + 1);
    ++bucket;
  }
  return std::max(now, buckets_.start(bucket));
}

Verdict TimeWheel::evaluate(const State& state, TimePoint now, Permits cost,
                            const Policy& policy) const noexcept {
  return verdict_at(admission_time(state, now, cost), now, policy);
}

void TimeWheel::commit(State& state, TimePoint now, Permits cost, Duration hold) const noexcept {
  const std::int64_t bucket = buckets_.index(saturating_add(now, hold));
  if (!state.buckets) {
    state.buckets = std::make_unique<Permits[]>(options_.slots);  // value-initialised: zeros
    state.head = bucket;
    state.total = 0;
  }
  // Rotate: the buckets passed over leave the window and are cleared.
  const std::int64_t passed = std::min<std::int64_t>(bucket - state.head, options_.slots);
  for (std::int64_t i = 1; i <= passed; ++i) {
    Permits& slot = state.buckets[slot_of(state.head + i)];
    state.total -= slot;
    slot = 0;
  }
  state.head = std::max(state.head, bucket);
  Permits& slot = state.buckets[slot_of(bucket)];
  const Permits added = saturating_sum(slot, cost) - slot;
  slot += added;
  state.total += added;
}

void TimeWheel::refund(State& state, TimePoint taken_at, TimePoint /*now*/,
                       Permits cost) const noexcept {
  const std::int64_t bucket = buckets_.index(taken_at);
  if (!state.buckets || bucket > state.head || bucket <= state.head - options_.slots) {
    return;
  }
  Permits& slot = state.buckets[slot_of(bucket)];
  const Permits back = std::min(slot, cost);
  slot -= back;
  state.total -= back;
}

Status TimeWheel::status(const State& state, TimePoint now) const noexcept {
  const TimePoint reset_at = fresh_at(state, now);
  const Duration reset = reset_at > now ? reset_at - now : Duration::zero();
  const std::int64_t current = buckets_.index(now);
  if (state.buckets && state.head > current) {
    return {.remaining = 0, .reset = reset};  // reservations are waiting: nothing left now
  }
  const std::uint64_t used = sum_ending_at(state, current);
  return {.remaining = options_.limit - std::min<std::uint64_t>(used, options_.limit),
          .reset = reset};
}

TimePoint TimeWheel::fresh_at(const State& state, TimePoint /*now*/) const noexcept {
  if (!state.buckets || state.total == 0) {
    return kAlways;
  }
  for (std::int64_t bucket = state.head; bucket > state.head - options_.slots; --bucket) {
    if (count_of(state, bucket) != 0) {
      return buckets_.start(bucket + options_.slots);
    }
  }
  return kAlways;
}

}  // namespace sluice::limiter
