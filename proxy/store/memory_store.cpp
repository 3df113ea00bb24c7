#include "proxy/store/memory_store.hpp"

namespace sluice::proxy {

bool MemoryStore::charge_now(std::size_t /*loop*/, const Decision& /*decision*/,
                             const Charges& charges, limiter::TimePoint now, ChargeResult& result) {
  result = Pipeline::charge_locally(charges, now);
  return true;
}

Awaitable<ChargeResult> MemoryStore::charge(std::size_t /*loop*/, const Decision& /*decision*/,
                                            const Charges& charges, limiter::TimePoint now) {
  co_return Pipeline::charge_locally(charges, now);
}

void MemoryStore::release(std::size_t /*loop*/, const Decision& decision) {
  Pipeline::release_locally(decision);
}

}  // namespace sluice::proxy
