#include "proxy/store/memory_store.hpp"

namespace sluice::store {

bool MemoryStore::charge_now(std::size_t /*loop*/, const pipeline::Decision& /*decision*/,
                             const pipeline::Charges& charges, limiter::TimePoint now,
                             pipeline::ChargeResult& result) {
  result = pipeline::Pipeline::charge_locally(charges, now);
  return true;
}

io::Awaitable<void> MemoryStore::charge(std::size_t /*loop*/,
                                        const pipeline::Decision& /*decision*/,
                                        const pipeline::Charges& charges, limiter::TimePoint now,
                                        pipeline::ChargeResult& result) {
  result = pipeline::Pipeline::charge_locally(charges, now);
  co_return;
}

void MemoryStore::release(std::size_t /*loop*/, const pipeline::Decision& decision) {
  pipeline::Pipeline::release_locally(decision);
}

void MemoryStore::settle(std::size_t /*loop*/, const pipeline::Decision& decision,
                         const pipeline::ResponseSaid& said, limiter::TimePoint now) {
  pipeline::Pipeline::settle_locally(decision, said, now);
}

}  // namespace sluice::store
