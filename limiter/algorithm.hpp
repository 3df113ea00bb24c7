#pragma once

#include <concepts>
#include <utility>

#include "limiter/calendar.hpp"
#include "limiter/time.hpp"
#include "limiter/verdict.hpp"

namespace sluice::limiter {

/// What KeyedLimiter needs of an algorithm. An algorithm holds only its parameters; the state of
/// one key is a small `State` value that KeyedLimiter stores and passes in. None of these reads a
/// clock, allocates (but for a key's first commit in sliding_log and wheel), locks or throws.
///
/// - `fresh_state(now)`: the state of a key never seen (or idle long enough to be forgotten).
/// - `evaluate(state, now, cost, policy)`: the verdict, without consuming anything.
/// - `commit(state, now, cost, hold)`: consume `cost` for a request admitted at `now + hold`.
/// - `status(state, now)`: remaining permits and time to reset, for headers.
/// - `fresh_at(state, now)`: when the state, as seen at `now`, becomes equivalent to
///   `fresh_state` again, so that the key can be dropped (kAlways: already; kNever: not while it
///   holds something, as concurrency).
/// - `max_cost()`: the largest cost the algorithm can ever admit.
template <class A>
concept Algorithm = requires(const A algorithm, typename A::State state, TimePoint now,
                             Permits cost, Policy policy, Duration hold) {
  { algorithm.fresh_state(now) } -> std::same_as<typename A::State>;
  { algorithm.evaluate(std::as_const(state), now, cost, policy) } -> std::same_as<Verdict>;
  { algorithm.commit(state, now, cost, hold) } -> std::same_as<void>;
  { algorithm.status(std::as_const(state), now) } -> std::same_as<Status>;
  { algorithm.fresh_at(std::as_const(state), now) } -> std::same_as<TimePoint>;
  { algorithm.max_cost() } -> std::same_as<Permits>;
};

/// Window algorithms count whole permits against a limit over a window of time.
struct WindowOptions {
  Permits limit = 0;
  Duration window{};
  /// fixed_window only: windows on calendar boundaries in `zone` (null: UTC), not `window`.
  Calendar calendar = Calendar::none;
  const TimeZone* zone = nullptr;
};

}  // namespace sluice::limiter
