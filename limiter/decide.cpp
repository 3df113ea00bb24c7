#include "limiter/decide.hpp"

#include <algorithm>
#include <array>
#include <cassert>
#include <cstdint>

namespace sluice::limiter {

Decision decide(std::span<const Charge> charges, TimePoint now,
                std::span<Outcome> outcomes) noexcept {
  assert(outcomes.size() >= charges.size());
  if (charges.size() > kMaxChargesPerRequest) {
    return {.admitted = false, .hold = {}, .retry_after = Duration::max()};
  }
  std::array<std::uint8_t, kMaxChargesPerRequest> order{};
  for (std::size_t i = 0; i < charges.size(); ++i) {
    order[i] = static_cast<std::uint8_t>(i);
  }
  const auto by_id = [&](std::uint8_t a, std::uint8_t b) {
    return charges[a].limiter->id() < charges[b].limiter->id();
  };
  std::sort(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(charges.size()), by_id);

  std::array<Ticket, kMaxChargesPerRequest> tickets{};
  Decision decision{.admitted = true, .hold = {}, .retry_after = {}};
  for (std::size_t n = 0; n < charges.size(); ++n) {
    const std::uint8_t i = order[n];
    const Charge& charge = charges[i];
    const Verdict verdict = charge.limiter->evaluate(charge.key, now, charge.cost, tickets[i]);
    outcomes[i].verdict = verdict;
    if (verdict.admitted) {
      decision.hold = std::max(decision.hold, verdict.hold);
    } else {
      decision.admitted = false;
      decision.retry_after = std::max(decision.retry_after, verdict.retry_after);
    }
  }
  for (std::size_t n = charges.size(); n-- > 0;) {
    const std::uint8_t i = order[n];
    const Charge& charge = charges[i];
    Limiter& limiter = *charge.limiter;
    bool consume = decision.admitted;
    if (consume && charge.settled_later) {
      tickets[i].cost = charge.reserve;
      consume = charge.reserve != 0;
    }
    outcomes[i].status = consume ? limiter.commit(tickets[i]) : limiter.abandon(tickets[i]);
  }
  if (decision.admitted) {
    decision.retry_after = {};
  } else {
    decision.hold = {};
  }
  return decision;
}

}  // namespace sluice::limiter
