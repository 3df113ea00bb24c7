#pragma once

#include "proxy/http/session_context.hpp"
#include "proxy/io/net.hpp"

namespace sluice::proxy {

/// Serves one client connection: reads requests (keep-alive, pipelined ones in order), runs
/// each through the pipeline and answers it or relays it to its upstream, streaming bodies both
/// ways. Owns its socket; everything else is in `context`.
Awaitable<void> serve_client(Socket socket, SessionContext context);

}  // namespace sluice::proxy
