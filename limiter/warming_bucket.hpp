#pragma once

#include "limiter/algorithm.hpp"
#include "limiter/rate.hpp"

namespace sluice::limiter {

struct WarmingBucketOptions {
  Rate rate;
  Duration warmup{};
  double cold_factor = 3;
};

/// token_bucket with `warmup`: Guava's SmoothWarmingUp, to the nanosecond (seed 003).
/// A new key starts cold with maxPermits stored. Stored permits cost between the stable interval
/// (1/rate) and cold_factor times it per permit, along Guava's trapezoid, with
/// thresholdPermits = 0.5·warmup/stable and maxPermits = threshold + 2·warmup/(stable + cold).
/// "Pay later": a request waits only for the reservations before it; its own cost delays the next
/// one. Reject mode admits when that wait is zero. Idle time refills stored permits at
/// maxPermits/warmup (Guava's coolDownInterval).
class WarmingBucket {
 public:
  struct State {
    double stored = 0;      ///< Guava's storedPermits.
    TimePoint next_free{};  ///< Guava's nextFreeTicket: when the next request may go.
  };

  explicit WarmingBucket(WarmingBucketOptions options);

  State fresh_state(TimePoint now) const noexcept {
    return {.stored = max_permits_, .next_free = now};
  }
  Verdict evaluate(const State& state, TimePoint now, Permits cost,
                   const Policy& policy) const noexcept;
  void commit(State& state, TimePoint now, Permits cost, Duration hold) const noexcept;
  Status status(const State& state, TimePoint now) const noexcept;
  TimePoint fresh_at(const State& state, TimePoint /*now*/) const noexcept;
  /// Pay later: any cost is admitted once the reservations before it are through.
  Permits max_cost() const noexcept;

  double threshold_permits() const noexcept { return threshold_permits_; }
  double max_permits() const noexcept { return max_permits_; }

 private:
  /// Guava's resync: credit idle time since next_free as stored permits.
  State resynced(State state, TimePoint now) const noexcept;
  /// Guava's storedPermitsToWaitTime: the area under the trapezoid, in ns.
  double stored_permits_wait(double stored, double taken) const noexcept;
  double permits_to_interval(double permits) const noexcept;

  double stable_interval_ns_;
  double threshold_permits_;
  double max_permits_;
  double slope_;
  double cool_down_interval_ns_;
};

}  // namespace sluice::limiter
