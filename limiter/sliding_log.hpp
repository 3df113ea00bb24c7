#pragma once

#include <cstdint>
#include <memory>

#include "limiter/algorithm.hpp"

namespace sluice::limiter {

/// Exact sliding log (seeds 000 and 002): one timestamp per admitted permit; admits when the
/// permits admitted in (now − window, now] plus cost <= limit. Memory grows with the limit: up to
/// 8 bytes per permit per key, allocated as the key's log grows (never past `limit` entries).
/// In delay mode a reservation is logged at the time it will be admitted.
class SlidingLog {
 public:
  struct State {
    std::unique_ptr<std::int64_t[]> times;  ///< Ring of timestamps (ns), oldest first.
    Permits capacity = 0;
    Permits first = 0;  ///< Ring index of the oldest timestamp.
    Permits size = 0;
  };

  explicit SlidingLog(WindowOptions options);

  State fresh_state(TimePoint /*now*/) const noexcept { return {}; }
  Verdict evaluate(const State& state, TimePoint now, Permits cost,
                   const Policy& policy) const noexcept;
  void commit(State& state, TimePoint now, Permits cost, Duration hold) const noexcept;
  /// A cost learnt after admission: logged as far as the log holds (`limit` timestamps), so a
  /// charge beyond it fills the window, and the key waits a whole window.
  void charge(State& state, TimePoint now, Permits cost) const noexcept;
  Status status(const State& state, TimePoint now) const noexcept;
  TimePoint fresh_at(const State& state, TimePoint /*now*/) const noexcept;
  Permits max_cost() const noexcept { return options_.limit; }

 private:
  /// Index (oldest = 0) of the first timestamp still inside the window that ends at `at`.
  static Permits first_inside(const State& state, TimePoint at, Duration window) noexcept;
  TimePoint admission_time(const State& state, TimePoint now, Permits cost) const noexcept;
  void reserve_room(State& state, Permits extra) const;

  WindowOptions options_;
};

}  // namespace sluice::limiter
