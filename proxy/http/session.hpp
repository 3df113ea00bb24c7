#pragma once

#include "proxy/http/loop_context.hpp"
#include "proxy/io/net.hpp"

namespace sluice::proxy {

/// Serves one client connection: reads requests (keep-alive, pipelined ones in order), runs
/// each through the pipeline and answers it or relays it to its upstream, streaming bodies both
/// ways. Owns its socket; what it shares with the loop's other connections is in `loop`, which
/// outlives it.
Awaitable<void> serve_client(Socket socket, LoopContext& loop);

}  // namespace sluice::proxy
