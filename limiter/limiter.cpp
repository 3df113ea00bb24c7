#include "limiter/limiter.hpp"

#include <atomic>

namespace sluice::limiter {
namespace {

std::uint64_t next_limiter_id() noexcept {
  static std::atomic<std::uint64_t> last{0};
  return last.fetch_add(1, std::memory_order_relaxed) + 1;
}

}  // namespace

Limiter::Limiter() : id_(next_limiter_id()) {}

Outcome Limiter::decide(KeyHash key, TimePoint now, Permits cost) noexcept {
  Ticket ticket;
  Outcome outcome;
  outcome.verdict = evaluate(key, now, cost, ticket);
  outcome.status = commit(ticket);
  return outcome;
}

}  // namespace sluice::limiter
