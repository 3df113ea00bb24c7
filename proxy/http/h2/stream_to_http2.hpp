#pragma once

#include <memory>

#include "proxy/http/exchange.hpp"
#include "proxy/http/h2/connection.hpp"
#include "proxy/http/request_state.hpp"

namespace sluice::http::h2 {

/// Relays the stream to an HTTP/2 upstream (h2c://, h2://) on one of the loop's multiplexed
/// sessions: the request's fields (with the forwarding fields, as for HTTP/1.1) and its body as
/// it comes; the response's head, body and trailers as they come, each side's window reopened by
/// what the other took. One coroutine waits for both sides on the client stream's signal. The
/// response head must come within `timeouts.upstream`, or a gRPC call's grpc-timeout if shorter
/// (then `deadline_passed`: the call fails with DEADLINE_EXCEEDED, as its deadline says).
io::Awaitable<RelayOutcome> relay_to_http2(Connection& connection,
                                           const std::shared_ptr<RequestStream>& client,
                                           RequestState& state, const Exchange& exchange, bool grpc,
                                           bool& deadline_passed);

}  // namespace sluice::http::h2
