#pragma once

#include "proxy/pipeline/pipeline.hpp"
#include "proxy/store/store.hpp"

namespace sluice::test {

/// A prepared request's charges through `store`, concluded by `pipeline`: what the session does
/// for each request, as one awaitable.
inline io::Awaitable<void> decide_through(store::Store& store, std::size_t loop,
                                          pipeline::Pipeline& pipeline,
                                          pipeline::Decision& decision,
                                          const pipeline::Charges& charges,
                                          limiter::TimePoint now) {
  pipeline::ChargeResult charged;
  if (!store.charge_now(loop, decision, charges, now, charged)) {
    co_await store.charge(loop, decision, charges, now, charged);
  }
  pipeline.conclude(decision, charges, charged, now);
}

}  // namespace sluice::test
