#pragma once

#include "proxy/http/exchange.hpp"
#include "proxy/http/loop_context.hpp"
#include "proxy/http/relay.hpp"

namespace sluice::http {

/// Counts a finished request in its loop's metrics, and logs it (the access log). `relayed`:
/// null when the proxy answered it itself.
void account(const LoopContext& loop, const Exchange& exchange, unsigned status,
             const RelayOutcome* relayed);

}  // namespace sluice::http
