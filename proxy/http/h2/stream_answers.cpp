// An HTTP/2 stream's answers of the proxy's own, plain or the gRPC way, and the waits a stream's
// coroutine makes on its client.
#include "proxy/http/h2/stream_answers.hpp"

#include <charconv>
#include <system_error>

#include "proxy/pipeline/http_text.hpp"

namespace sluice::http::h2 {

bool is_grpc(const HeadFields& head) noexcept {
  static constexpr std::string_view kGrpc = "application/grpc";
  const std::string_view type = head.value_of(http::field::content_type);
  return type.size() >= kGrpc.size() &&
         pipeline::equal_ignoring_case(type.substr(0, kGrpc.size()), kGrpc);
}

GrpcStatus grpc_status(const pipeline::Decision& decision, unsigned http_status) noexcept {
  if (decision.outcome == pipeline::Outcome::limited) {
    return GrpcStatus::resource_exhausted;
  }
  if (decision.outcome == pipeline::Outcome::denied && http_status == 403) {
    return GrpcStatus::permission_denied;
  }
  if (decision.outcome == pipeline::Outcome::unauthorized) {
    return GrpcStatus::unauthenticated;
  }
  switch (http_status) {
    case 400:
    case 431:
      return GrpcStatus::internal;
    case 404:
      return GrpcStatus::unimplemented;
    default:
      return GrpcStatus::unavailable;
  }
}

namespace {

/// Whether the rest of a stream's body is short: its declared length at most kLingerBytes past
/// what came.
bool rest_is_short(const RequestStream& stream) {
  for (const RequestStream::ReceivedField& field : stream.fields) {
    if (stream.name_of(field) == "content-length") {
      const std::string_view value = stream.value_of(field);
      std::uint64_t length = 0;
      const auto [end, error] = std::from_chars(value.data(), value.data() + value.size(), length);
      return error == std::errc() && end == value.data() + value.size() &&
             length <= stream.body_received + kLingerBytes;
    }
  }
  return false;
}

}  // namespace

io::Awaitable<void> await_close(Connection& connection, RequestStream& stream,
                                limiter::Duration timeout) {
  std::optional<std::chrono::steady_clock::time_point> linger_until;
  while (!stream.closed) {
    if (stream.answered && !stream.body_done) {
      if (!linger_until) {
        linger_until = std::chrono::steady_clock::now() +
                       (rest_is_short(stream) ? kLingerForTheBody : limiter::Duration::zero());
      }
      const auto now = std::chrono::steady_clock::now();
      if (now >= *linger_until) {
        connection.session().reset(stream, NGHTTP2_NO_ERROR);
        connection.flush();
        co_return;
      }
      co_await stream.changed.wait_for(*linger_until - now);
      continue;
    }
    const bool changed = co_await stream.changed.wait_for(timeout);
    if (!changed) {
      connection.session().reset(stream, NGHTTP2_CANCEL);
      connection.flush();
      co_return;
    }
  }
}

io::Awaitable<void> answer_own(Connection& connection, RequestStream& stream, RequestState& state,
                               bool grpc, limiter::Duration timeout,
                               std::optional<GrpcStatus> grpc_code) {
  Session& session = connection.session();
  FieldList& fields = connection.response_fields();
  const OwnResponse& own = state.own();
  const std::string_view head(own.head.data(), own.head.size());
  stream.discard_body = true;
  if (!stream.body.empty()) {
    session.consume(stream, stream.body.size());
    stream.body.clear();
  }
  if (grpc) {
    fields.read(head, {"content-type", "content-length"});
    const unsigned status = fields.status();
    fields.set_status(200);
    fields.add("content-type", "application/grpc");
    fields.add("grpc-status",
               grpc_status_text(grpc_code.value_or(grpc_status(state.decision, status))));
    fields.add("grpc-message",
               grpc_message(http::obsolete_reason(static_cast<http::status>(status))));
    session.respond(stream, fields.list(), false);
  } else {
    fields.read(head);
    const std::string_view content = own.content();
    stream.out = std::span<const char>(content.data(), content.size());
    stream.out_done = true;
    session.respond(stream, fields.list(), !content.empty());
  }
  connection.flush();
  co_await await_close(connection, stream, timeout);  // the body is lent until it is sent
}

io::Awaitable<bool> await_body(RequestStream& stream, limiter::Duration timeout) {
  while (stream.body.empty() && !stream.body_done && !stream.closed) {
    const bool changed = co_await stream.changed.wait_for(timeout);
    if (!changed) {
      co_return false;
    }
  }
  co_return true;
}

}  // namespace sluice::http::h2
