#pragma once

#include <cstddef>
#include <span>

#include "limiter/limiter.hpp"

namespace sluice::limiter {

/// What one request asks of one limiter.
struct Charge {
  Limiter* limiter = nullptr;
  KeyHash key = 0;
  Permits cost = 1;
  /// A charge settled once the response is over (SPEC §9: `cost: response`, `count_if`): the
  /// request is admitted if `cost` fits, and consumes only `reserve` now.
  bool settled_later = false;
  Permits reserve = 0;
};

/// The decision over all the limiters of a request.
struct Decision {
  bool admitted = false;
  Duration hold{};         ///< Longest hold of the delay-mode limiters.
  Duration retry_after{};  ///< When refused: the longest retry_after of the refusing limiters.
};

/// Limiters one request may name. Config refuses routes with more.
inline constexpr std::size_t kMaxChargesPerRequest = 16;
/// Of them, charges settled after the response. Config refuses routes with more.
inline constexpr std::size_t kMaxChargesSettledLater = 4;

/// All or nothing: the request consumes from every limiter, or from none when any refuses.
/// The limiters' shards are locked together, in limiter id order (no deadlock), so no other
/// request can slip in between the checks and the commits. Each charge must name a different
/// limiter. `outcomes[i]` receives charges[i]'s verdict and status. Thread-safe.
Decision decide(std::span<const Charge> charges, TimePoint now,
                std::span<Outcome> outcomes) noexcept;

}  // namespace sluice::limiter
