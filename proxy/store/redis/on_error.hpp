#pragma once

#include "config/proxy_config.hpp"
#include "limiter/time.hpp"
#include "proxy/pipeline/pipeline.hpp"

namespace sluice::store::redis {

/// What `on_error` makes of a request Redis could not decide: let it pass uncounted (allow),
/// refuse it (deny: 503), or charge the memory limiters (local).
pipeline::ChargeResult fall_back(config::OnStoreError on_error, const pipeline::Charges& charges,
                                 limiter::TimePoint now);

}  // namespace sluice::store::redis
