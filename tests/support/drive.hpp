#pragma once

#include "limiter/algorithm.hpp"

namespace sluice::test {

/// Runs one request through a bare algorithm as KeyedLimiter would: evaluate, then commit if
/// admitted. Lets algorithm tests read like a timeline of requests.
template <limiter::Algorithm A>
limiter::Verdict request(const A& algorithm, typename A::State& state, limiter::TimePoint now,
                         limiter::Permits cost = 1, limiter::Policy policy = {}) {
  const limiter::Verdict verdict = algorithm.evaluate(state, now, cost, policy);
  if (verdict.admitted) {
    algorithm.commit(state, now, cost, verdict.hold);
  }
  return verdict;
}

/// Sends requests at `now` until one is refused; returns how many were admitted.
template <limiter::Algorithm A>
int admit_all(const A& algorithm, typename A::State& state, limiter::TimePoint now,
              limiter::Permits cost = 1, limiter::Policy policy = {}) {
  int admitted = 0;
  while (request(algorithm, state, now, cost, policy).admitted) {
    ++admitted;
    if (admitted > 1'000'000) {
      break;
    }
  }
  return admitted;
}

inline constexpr limiter::Policy delay(limiter::Duration max_delay) {
  return {.mode = limiter::Mode::delay, .max_delay = max_delay};
}

}  // namespace sluice::test
