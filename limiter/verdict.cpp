#include "limiter/verdict.hpp"

namespace sluice::limiter {

Verdict verdict_at(TimePoint admit_at, TimePoint now, const Policy& policy) noexcept {
  if (admit_at == kNever) {
    return {.admitted = false, .hold = {}, .retry_after = Duration::max()};
  }
  const Duration wait = admit_at > now ? admit_at - now : Duration::zero();
  if (wait == Duration::zero()) {
    return {.admitted = true, .hold = {}, .retry_after = {}};
  }
  if (policy.mode == Mode::delay) {
    if (wait <= policy.max_delay) {
      return {.admitted = true, .hold = wait, .retry_after = {}};
    }
    // Retrying after this long, the hold would fit within max_delay.
    return {.admitted = false, .hold = {}, .retry_after = wait - policy.max_delay};
  }
  return {.admitted = false, .hold = {}, .retry_after = wait};
}

}  // namespace sluice::limiter
