#pragma once

#include "proxy/http/client_connection.hpp"
#include "proxy/http/exchange.hpp"
#include "proxy/http/loop_context.hpp"
#include "proxy/http/relay.hpp"

namespace sluice::http::h2 {

/// Relays an HTTP/1.1 client's request (its head parsed, its body still in the connection) to
/// an HTTP/2 upstream (h2c://, h2://), on one of the loop's multiplexed sessions, and the
/// response back as HTTP/1.1: its Content-Length kept, else chunked (until close for HTTP/1.0),
/// its trailers as the chunked body's trailer fields. Forwarding fields, limit fields and
/// `Expect: 100-continue` as the HTTP/1.1 relay does them; an unreachable upstream answers 502,
/// a slow one 504. An upgrade is not relayed (HTTP/2 has none): the request goes as a plain one.
io::Awaitable<RelayOutcome> relay_http1_to_http2(ClientConnection& downstream,
                                                 const Exchange& exchange, LoopContext& loop);

}  // namespace sluice::http::h2
