#pragma once

#include <chrono>

#include "proxy/http/loop_context.hpp"
#include "proxy/io/net.hpp"

namespace sluice::http {

/// Starts serving one client connection and returns: it waits for requests (keep-alive,
/// pipelined ones in order), runs each through the pipeline and answers it or relays it to its
/// upstream, streaming bodies both ways. It owns its socket; what it shares with the loop's other
/// connections is in `loop`, which outlives it. Call it on the loop's thread.
void serve_client(io::Socket socket, LoopContext& loop);

/// How long a keep-alive connection keeps its request state and coroutine after answering, in
/// case its next request comes soon (LingeringConnections); it is parked after 1 to 2 times this.
inline constexpr std::chrono::milliseconds kLingerBeforeParking{50};

/// Parks, every kLingerBeforeParking, the loop's connections that have lingered that long.
/// Runs on the loop until it stops.
io::Awaitable<void> park_lingering(LoopContext& loop);

}  // namespace sluice::http
