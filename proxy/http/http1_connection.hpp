#pragma once

#include <chrono>
#include <cstddef>

#include "proxy/http/loop_context.hpp"
#include "proxy/http/open_connection.hpp"
#include "proxy/io/net.hpp"

namespace sluice::http {

/// Serves an HTTP/1.1 client connection from its first request on, whose bytes have come or
/// are awaited: requests in order (keep-alive, pipelined ones too), each through serve_exchange.
/// A connection quiet after its answers is parked (below), and served again when its next
/// request comes. Call it on the connection's loop.
io::Awaitable<void> serve_http1(OpenPtr open, LoopContext& loop);

/// How often a loop parks its quiet connections (QuietConnections): a keep-alive connection
/// keeps its request state and coroutine after answering until the next such sweep, 0 to this
/// long, in case its next request comes soon.
inline constexpr std::chrono::milliseconds kParkingInterval{20};

/// Every kParkingInterval: parks the loop's lingering connections, and closes the parked ones
/// quiet for `timeouts.idle`. Runs on the loop until it stops.
io::Awaitable<void> park_quiet(LoopContext& loop);

}  // namespace sluice::http
