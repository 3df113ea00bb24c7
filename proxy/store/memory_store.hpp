#pragma once

#include "proxy/store/store.hpp"

namespace sluice::store {

/// The counters in this process's memory (SPEC §2 `store: memory`): the pipeline's own limiters,
/// charged at once.
class MemoryStore final : public Store {
 public:
  bool charge_now(std::size_t loop, const pipeline::Decision& decision,
                  const pipeline::Charges& charges, limiter::TimePoint now,
                  pipeline::ChargeResult& result) override;
  io::Awaitable<void> charge(std::size_t loop, const pipeline::Decision& decision,
                             const pipeline::Charges& charges, limiter::TimePoint now,
                             pipeline::ChargeResult& result) override;
  void release(std::size_t loop, const pipeline::Decision& decision) override;
  void settle(std::size_t loop, const pipeline::Decision& decision,
              const pipeline::ResponseSaid& said, limiter::TimePoint now) override;
};

}  // namespace sluice::store
