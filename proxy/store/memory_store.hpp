#pragma once

#include "proxy/store/store.hpp"

namespace sluice::proxy {

/// The counters in this process's memory (SPEC §2 `store: memory`): the pipeline's own limiters,
/// charged at once.
class MemoryStore final : public Store {
 public:
  bool charge_now(std::size_t loop, const Decision& decision, const Charges& charges,
                  limiter::TimePoint now, ChargeResult& result) override;
  Awaitable<ChargeResult> charge(std::size_t loop, const Decision& decision, const Charges& charges,
                                 limiter::TimePoint now) override;
  void release(std::size_t loop, const Decision& decision) override;
};

}  // namespace sluice::proxy
