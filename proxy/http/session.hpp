#pragma once

#include <chrono>
#include <cstddef>

#include "proxy/http/loop_context.hpp"
#include "proxy/io/net.hpp"

namespace sluice::http {

/// Starts serving one client connection and returns: it waits for requests (keep-alive,
/// pipelined ones in order), runs each through the pipeline and answers it or relays it to its
/// upstream, streaming bodies both ways. It owns its socket; what it shares with the loop's other
/// connections is in `loop`, which outlives it. Call it on the loop's thread.
/// `listener`: the index of the listener that accepted it; on a TLS one the connection starts
/// with a handshake.
void serve_client(io::Socket socket, LoopContext& loop, std::size_t listener);

/// How often a loop parks its quiet connections (QuietConnections): a keep-alive connection
/// keeps its request state and coroutine after answering until the next such sweep, 0 to this
/// long, in case its next request comes soon.
inline constexpr std::chrono::milliseconds kParkingInterval{20};

/// Every kParkingInterval: parks the loop's lingering connections, and closes the parked ones
/// quiet for `timeouts.idle`. Runs on the loop until it stops.
io::Awaitable<void> park_quiet(LoopContext& loop);

}  // namespace sluice::http
