#pragma once
// Waits in whole seconds, as the answers' fields say them: one rule for the proxy's headers, the
// admin port and `sluice replay` (whose `retry_after` must be what the header would have said).
#include <cstdint>
#include <optional>

#include "limiter/time.hpp"
#include "proxy/pipeline/pipeline.hpp"

namespace sluice::pipeline {

/// Whole seconds, rounded up; 0 for no time at all (RateLimit's `t`, X-RateLimit-Reset).
constexpr std::uint64_t seconds_rounded_up(limiter::Duration duration) noexcept {
  return duration <= limiter::Duration::zero()
             ? 0
             : static_cast<std::uint64_t>((duration.count() + 999'999'999) / 1'000'000'000);
}

/// Retry-After: whole seconds, rounded up, at least 1 (a wait of none or of "never" gives 1: a
/// client told 0 would retry at once, and no wait helps a cost that can never pass).
constexpr std::uint64_t retry_after_seconds(limiter::Duration wait) noexcept {
  if (wait <= limiter::Duration::zero() || wait == limiter::Duration::max()) {
    return 1;
  }
  return seconds_rounded_up(wait);
}

/// The Retry-After field a decision's answer carries, if any: every limited answer, and a denied
/// one with a wait (a ban, a store that fails closed).
constexpr std::optional<std::uint64_t> retry_after_field(const Decision& decision) noexcept {
  if (decision.outcome == Outcome::limited ||
      (decision.outcome == Outcome::denied && decision.retry_after > limiter::Duration::zero())) {
    return retry_after_seconds(decision.retry_after);
  }
  return std::nullopt;
}

}  // namespace sluice::pipeline
