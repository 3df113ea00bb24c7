#pragma once

#include "proxy/http/loop_context.hpp"
#include "proxy/io/net.hpp"

namespace sluice::http {

/// Serves one client connection: reads requests (keep-alive, pipelined ones in order), runs
/// each through the pipeline and answers it or relays it to its upstream, streaming bodies both
/// ways. Owns its socket; what it shares with the loop's other connections is in `loop`, which
/// outlives it.
io::Awaitable<void> serve_client(io::Socket socket, LoopContext& loop);

}  // namespace sluice::http
