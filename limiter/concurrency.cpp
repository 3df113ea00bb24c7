#include "limiter/concurrency.hpp"

#include <algorithm>

#include "limiter/validate.hpp"

namespace sluice::limiter {

Concurrency::Concurrency(Permits limit) : limit_(limit) { require_at_least("limit", limit, 1); }

Verdict Concurrency::evaluate(const State& state, TimePoint /*now*/, Permits cost,
                              const Policy& /*policy*/) const noexcept {
  if (std::uint64_t{state.in_flight} + cost <= limit_) {
    return {.admitted = true, .hold = {}, .retry_after = {}};
  }
  return {.admitted = false,
          .hold = {},
          .retry_after = cost > limit_ ? Duration::max() : Duration(std::chrono::seconds(1))};
}

void Concurrency::commit(State& state, TimePoint /*now*/, Permits cost,
                         Duration /*hold*/) const noexcept {
  state.in_flight += cost;
}

void Concurrency::release(State& state, Permits cost) const noexcept {
  state.in_flight -= std::min(cost, state.in_flight);
}

Status Concurrency::status(const State& state, TimePoint /*now*/) const noexcept {
  return {.remaining = limit_ - std::min(state.in_flight, limit_), .reset = Duration::zero()};
}

}  // namespace sluice::limiter
