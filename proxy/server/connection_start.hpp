#pragma once

#include <cstddef>

#include "proxy/http/loop_context.hpp"
#include "proxy/io/net.hpp"

namespace sluice::server {

/// Starts serving a client connection the listener `listener` accepted, and returns: on a TLS
/// listener its handshake first (plain HTTP there gets a 400 that says why); then HTTP/2 when
/// ALPN chose it or the connection starts with HTTP/2's preface (with `http2` on), else
/// HTTP/1.1. The connection owns its socket; what it shares with the loop's other connections
/// is in `loop`, which outlives it. Call it on the loop's thread.
void serve_client(io::Socket socket, http::LoopContext& loop, std::size_t listener);

}  // namespace sluice::server
