#include "limiter/make_limiter.hpp"

#include <algorithm>
#include <array>
#include <limits>
#include <stdexcept>
#include <string>
#include <utility>

#include "limiter/concurrency.hpp"
#include "limiter/fixed_window.hpp"
#include "limiter/keyed_limiter.hpp"
#include "limiter/leaky_bucket.hpp"
#include "limiter/sliding_log.hpp"
#include "limiter/sliding_window.hpp"
#include "limiter/time_wheel.hpp"
#include "limiter/token_bucket.hpp"
#include "limiter/validate.hpp"
#include "limiter/warming_bucket.hpp"

namespace sluice::limiter {
namespace {

constexpr std::array<std::pair<AlgorithmKind, std::string_view>, 7> kNames{{
    {AlgorithmKind::fixed_window, "fixed_window"},
    {AlgorithmKind::sliding_log, "sliding_log"},
    {AlgorithmKind::sliding_window, "sliding_window"},
    {AlgorithmKind::wheel, "wheel"},
    {AlgorithmKind::token_bucket, "token_bucket"},
    {AlgorithmKind::leaky_bucket, "leaky_bucket"},
    {AlgorithmKind::concurrency, "concurrency"},
}};

Permits checked_limit(const LimiterOptions& options) {
  require_at_least("limit", options.limit, 1);
  require_at_most("limit", options.limit, std::numeric_limits<Permits>::max());
  return static_cast<Permits>(options.limit);
}

WindowOptions window_options(const LimiterOptions& options) {
  return {.limit = checked_limit(options),
          .window = options.window,
          .calendar = Calendar::none,
          .zone = nullptr};
}

template <class A>
std::unique_ptr<Limiter> keyed(A algorithm, const LimiterOptions& options) {
  return std::make_unique<KeyedLimiter<A>>(std::move(algorithm), options.policy,
                                           static_cast<std::size_t>(options.max_keys));
}

std::unique_ptr<Limiter> make_token_bucket(const LimiterOptions& options) {
  if (options.warmup > Duration::zero()) {
    return keyed(
        WarmingBucket(
            {.rate = options.rate, .warmup = options.warmup, .cold_factor = options.cold_factor}),
        options);
  }
  require_not_negative("warmup", options.warmup);
  const double burst = options.burst.value_or(std::max(1.0, options.rate.per_second()));
  return keyed(TokenBucket({.rate = options.rate, .burst = burst}), options);
}

}  // namespace

std::string_view name_of(AlgorithmKind kind) noexcept {
  for (const auto& [k, name] : kNames) {
    if (k == kind) {
      return name;
    }
  }
  return "unknown";
}

std::optional<AlgorithmKind> algorithm_named(std::string_view name) noexcept {
  for (const auto& [kind, n] : kNames) {
    if (n == name) {
      return kind;
    }
  }
  return std::nullopt;
}

std::unique_ptr<Limiter> make_limiter(const LimiterOptions& options) {
  require_at_least("max_keys", options.max_keys, 1);
  require_not_negative("max_delay", options.policy.max_delay);
  switch (options.algorithm) {
    case AlgorithmKind::fixed_window: {
      WindowOptions window = window_options(options);
      window.calendar = options.calendar;
      window.zone = options.time_zone;
      return keyed(FixedWindow(window), options);
    }
    case AlgorithmKind::sliding_log:
      return keyed(SlidingLog(window_options(options)), options);
    case AlgorithmKind::sliding_window:
      return keyed(SlidingWindow(window_options(options)), options);
    case AlgorithmKind::wheel:
      require_at_most("slots", options.slots, std::numeric_limits<std::uint32_t>::max());
      return keyed(TimeWheel({.limit = checked_limit(options),
                              .window = options.window,
                              .slots = static_cast<std::uint32_t>(options.slots)}),
                   options);
    case AlgorithmKind::token_bucket:
      return make_token_bucket(options);
    case AlgorithmKind::leaky_bucket:
      return keyed(LeakyBucket({.rate = options.rate, .burst = options.burst.value_or(0)}),
                   options);
    case AlgorithmKind::concurrency:
      return keyed(Concurrency(checked_limit(options)), options);
  }
  throw std::invalid_argument("algorithm is unknown");
}

void require_admissible(const Limiter& limiter, Permits cost) {
  require_at_least("cost", cost, 1);
  if (cost > limiter.max_cost()) {
    throw std::invalid_argument("cost " + std::to_string(cost) +
                                " can never be admitted: at most " +
                                std::to_string(limiter.max_cost()) + " permits fit");
  }
}

}  // namespace sluice::limiter
