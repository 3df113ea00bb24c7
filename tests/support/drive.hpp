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

/// Fills a fresh key at `at`, then asks again at `earlier` (a clock stepped back) and an hour
/// after `at`: nothing passes while time is behind, and `capacity` requests pass again once it
/// has moved on.
template <limiter::Algorithm A>
void expect_clock_step_back_is_safe(const A& algorithm, limiter::TimePoint at,
                                    limiter::TimePoint earlier, int capacity) {
  auto state = algorithm.fresh_state(at);
  EXPECT_EQ(admit_all(algorithm, state, at), capacity);
  EXPECT_EQ(admit_all(algorithm, state, earlier), 0) << "after stepping back";
  EXPECT_EQ(admit_all(algorithm, state, at + std::chrono::hours(1)), capacity) << "an hour on";
}

inline constexpr limiter::Policy delay(limiter::Duration max_delay) {
  return {.mode = limiter::Mode::delay, .max_delay = max_delay};
}

}  // namespace sluice::test
