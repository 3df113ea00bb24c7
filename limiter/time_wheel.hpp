#pragma once

#include <cstdint>
#include <limits>
#include <memory>

#include "limiter/algorithm.hpp"
#include "limiter/periods.hpp"

namespace sluice::limiter {

struct WheelOptions {
  Permits limit = 0;
  Duration window{};
  std::uint32_t slots = 10;  ///< The window is `slots` epoch-aligned buckets of window/slots.
};

/// Time wheel (seed 004): a ring of `slots` bucket counters rotated on access, clearing the
/// buckets it passes over; admits when the last `slots` buckets plus cost <= limit.
/// O(slots) memory per key, allocated on the key's first admitted request.
class TimeWheel {
 public:
  struct State {
    std::int64_t head = std::numeric_limits<std::int64_t>::min();  ///< Newest bucket.
    std::uint64_t total = 0;             ///< Sum of the buckets in (head − slots, head].
    std::unique_ptr<Permits[]> buckets;  ///< Ring indexed by bucket mod slots.
  };

  explicit TimeWheel(WheelOptions options);

  State fresh_state(TimePoint /*now*/) const noexcept { return {}; }
  Verdict evaluate(const State& state, TimePoint now, Permits cost,
                   const Policy& policy) const noexcept;
  void commit(State& state, TimePoint now, Permits cost, Duration hold) const noexcept;
  /// Gives back `cost` permits taken at `taken_at`, if its bucket is still in the wheel.
  void refund(State& state, TimePoint taken_at, TimePoint now, Permits cost) const noexcept;
  Status status(const State& state, TimePoint now) const noexcept;
  TimePoint fresh_at(const State& state, TimePoint /*now*/) const noexcept;
  Permits max_cost() const noexcept { return options_.limit; }

 private:
  std::size_t slot_of(std::int64_t bucket) const noexcept;
  /// Count of `bucket` as far as `state` knows (0 outside (head − slots, head]).
  Permits count_of(const State& state, std::int64_t bucket) const noexcept;
  /// Sum of the `slots` buckets that end at `bucket`.
  std::uint64_t sum_ending_at(const State& state, std::int64_t bucket) const noexcept;
  TimePoint admission_time(const State& state, TimePoint now, Permits cost) const noexcept;

  WheelOptions options_;
  Periods buckets_;
};

}  // namespace sluice::limiter
