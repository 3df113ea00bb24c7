#pragma once

#include <optional>

#include "proxy/http/grpc_status.hpp"
#include "proxy/http/h2/connection.hpp"
#include "proxy/http/head_fields.hpp"
#include "proxy/http/request_state.hpp"
#include "proxy/pipeline/pipeline.hpp"

namespace sluice::http::h2 {

/// A gRPC call (SPEC §7): its Content-Type is application/grpc, or application/grpc+proto...
bool is_grpc(const HeadFields& head) noexcept;

/// The gRPC status for an answer of the proxy's own (SPEC §7): limited is RESOURCE_EXHAUSTED,
/// denied or banned PERMISSION_DENIED; the rest as gRPC maps HTTP statuses.
GrpcStatus grpc_status(const pipeline::Decision& decision, unsigned http_status) noexcept;

/// Waits until the stream is closed, up to `timeout` since it last changed; then resets it. A
/// stream answered whole while its client still sends a body it no longer needs is reset with
/// NO_ERROR (RFC 9113 §8.1), after the answer's last frame: else it would hold a place among
/// the connection's streams until the client ends the body.
io::Awaitable<void> await_close(Connection& connection, RequestStream& stream,
                                limiter::Duration timeout);

/// Answers the stream with `state.own` (as the HTTP/1 session would answer), the gRPC way
/// for a gRPC call: HTTP 200 and a trailers-only response whose grpc-status says why
/// (`grpc_code`, or what the decision and status say). The request's body is not wanted:
/// dropped as it comes.
io::Awaitable<void> answer_own(Connection& connection, RequestStream& stream, RequestState& state,
                               bool grpc, limiter::Duration timeout,
                               std::optional<GrpcStatus> grpc_code = std::nullopt);

/// Until the stream has body bytes to pass on, its body is over, or it closed; false when the
/// client sent nothing for `timeout`.
io::Awaitable<bool> await_body(RequestStream& stream, limiter::Duration timeout);

}  // namespace sluice::http::h2
