#pragma once

#include "proxy/http/exchange.hpp"
#include "proxy/http/h2/connection.hpp"
#include "proxy/http/request_state.hpp"

namespace sluice::http::h2 {

/// Sends the stream's request to its HTTP/1.1 upstream and the response back on the stream: on
/// a parked connection when there is one (a request without a body that fails on it is sent
/// again, once, on a new one, as for an HTTP/1.1 client), its body through the loop's chunk as
/// the client's window lets it go.
io::Awaitable<RelayOutcome> relay_to_http1(Connection& connection, RequestStream& stream,
                                           RequestState& state, const Exchange& exchange);

}  // namespace sluice::http::h2
