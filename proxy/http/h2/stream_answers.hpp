#pragma once

#include <chrono>
#include <cstdint>
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

/// A stream answered whole (a refusal) while its client still sends a short body (its declared
/// length at most kLingerBytes past what came) waits up to kLingerForTheBody for the rest,
/// dropping it, before it stops the upload, as nginx discards such a body: some clients (curl
/// before 8) fail a request whose upload is stopped, even after a whole answer. That much the
/// client may send without waiting for a window update.
inline constexpr std::uint64_t kLingerBytes = 64 * 1024;
inline constexpr auto kLingerForTheBody = std::chrono::milliseconds(250);

/// Waits until the stream is closed, up to `timeout` since it last changed; then resets it. A
/// stream answered whole while its client still sends a body it no longer needs is reset with
/// NO_ERROR (RFC 9113 §8.1), at once or, for a short body, once kLingerForTheBody has passed
/// without its end: else it would hold a place among the connection's streams until the client
/// ends the body.
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
