#pragma once

#include <cstdint>

#include "limiter/time.hpp"

namespace sluice::limiter {

/// Permits a request takes (its cost) or a limiter holds. Limits fit in 32 bits.
using Permits = std::uint32_t;

/// a + b, or the most Permits hold: a count charged after the response (SPEC §9) may pass the
/// limit, so it may meet the type's end.
constexpr Permits saturating_sum(Permits a, Permits b) noexcept {
  return a > static_cast<Permits>(~Permits{0}) - b ? static_cast<Permits>(~Permits{0}) : a + b;
}

/// reject: answer at once. delay: hold the request until it would be admitted, if that is
/// within `max_delay`, reserving its permits at arrival (nginx limit_req without nodelay).
enum class Mode : std::uint8_t { reject, delay };

struct Policy {
  Mode mode = Mode::reject;
  Duration max_delay = std::chrono::seconds(1);

  bool operator==(const Policy&) const = default;
};

/// One limiter's answer for one request.
struct Verdict {
  bool admitted = false;
  Duration hold{};         ///< How long to hold an admitted request (delay mode only).
  Duration retry_after{};  ///< When rejected: wait before the same request could pass.
                           ///< Duration::max() when it can never pass.
};

/// What a key has left, for RateLimit / X-RateLimit-* headers and introspection.
struct Status {
  std::uint64_t remaining = 0;  ///< Permits a request could take right now.
  Duration reset{};             ///< Until the quota is whole again.
};

/// The verdict for a request that could be admitted at `admit_at` (kNever: not at all).
/// Reject mode admits only when `admit_at` is now; delay mode also when it is within max_delay.
Verdict verdict_at(TimePoint admit_at, TimePoint now, const Policy& policy) noexcept;

}  // namespace sluice::limiter
