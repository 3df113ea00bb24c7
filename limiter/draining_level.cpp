#include "limiter/draining_level.hpp"

#include <cmath>
#include <limits>

namespace sluice::limiter {

Status DrainingLevel::status(TimePoint now, double capacity,
                             const RateFactors& rate) const noexcept {
  const double level = at(now, rate);
  const double room = capacity - level;
  return {.remaining = room > 0 ? static_cast<std::uint64_t>(room + kPermitTolerance) : 0,
          .reset = rate.time_for(level)};
}

Permits largest_cost(double capacity) noexcept {
  const double whole = std::floor(capacity + kPermitTolerance);
  return whole >= std::numeric_limits<Permits>::max() ? std::numeric_limits<Permits>::max()
                                                      : static_cast<Permits>(whole);
}

}  // namespace sluice::limiter
