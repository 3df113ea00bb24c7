#pragma once

#include "limiter/algorithm.hpp"

namespace sluice::limiter {

/// In-flight requests per key: admits while in_flight + cost <= limit; the owner calls release()
/// when the response is complete or the client goes away. The time a permit comes back is not
/// known, so delay mode behaves as reject mode and retry_after is a one-second hint.
class Concurrency {
 public:
  struct State {
    Permits in_flight = 0;
  };

  explicit Concurrency(Permits limit);

  State fresh_state(TimePoint /*now*/) const noexcept { return {}; }
  Verdict evaluate(const State& state, TimePoint now, Permits cost,
                   const Policy& policy) const noexcept;
  void commit(State& state, TimePoint now, Permits cost, Duration hold) const noexcept;
  void release(State& state, Permits cost) const noexcept;
  Status status(const State& state, TimePoint now) const noexcept;
  TimePoint fresh_at(const State& state, TimePoint /*now*/) const noexcept {
    return state.in_flight == 0 ? kAlways : kNever;
  }
  Permits max_cost() const noexcept { return limit_; }

 private:
  Permits limit_;
};

}  // namespace sluice::limiter
