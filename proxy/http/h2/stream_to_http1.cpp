// An HTTP/2 stream relayed to an HTTP/1.1 upstream.
#include "proxy/http/h2/stream_to_http1.hpp"

#include <array>
#include <chrono>
#include <memory>
#include <string>

#include "proxy/http/h2/stream_answers.hpp"
#include "proxy/http/h2/stream_body.hpp"
#include "proxy/http/http1_body.hpp"
#include "proxy/http/relay_heads.hpp"
#include "proxy/http/request_rewrite.hpp"
#include "proxy/http/upstream_request.hpp"
#include "proxy/io/socket_io.hpp"

namespace sluice::http::h2 {
namespace {

/// Writes the stream's request to an HTTP/1.1 upstream: its head (in `state.relay_head`), then
/// its body from `body` (the stream's, or as a RequestRewrite holds it), chunked when `chunked`
/// (no Content-Length), reopening the stream's window by what went on.
class StreamRequestWriter final : public RequestWriter {
 public:
  StreamRequestWriter(RequestStream& stream, RequestState& state, const Exchange& exchange,
                      BodySource& body, bool chunked)
      : stream_(stream),
        state_(state),
        timeouts_(exchange.config().timeouts),
        body_(body),
        chunked_(chunked) {}

  void connected(io::Stream* server) noexcept override { stream_.upstream = server; }

  io::Awaitable<RequestWritten> write(io::Stream& server, bool) override {
    SocketBodySink upstream(server, &state_.relay_head, chunked_, timeouts_.upstream);
    BodyCarry carried_body(body_, upstream);  // no coroutine of its own while nothing waits
    if (!carried_body.now()) {
      co_await carried_body.rest();
    }
    const Carried& carried = carried_body.result();
    co_return RequestWritten{.error = carried.source_failed ? beast::error_code() : carried.error,
                             .client_failed = carried.source_failed};
  }

 private:
  RequestStream& stream_;
  RequestState& state_;
  const config::Timeouts& timeouts_;
  BodySource& body_;
  bool chunked_;
};

}  // namespace

io::Awaitable<RelayOutcome> relay_to_http1(Connection& connection, RequestStream& stream,
                                           RequestState& state, const Exchange& exchange) {
  LoopContext& loop = connection.loop();
  Session& session = connection.session();
  const config::Upstream& upstream = exchange.upstream();
  const config::Timeouts& timeouts = exchange.config().timeouts;
  const RequestHead& request = exchange.request;
  HeadText& head = state.relay_head;
  const bool repeatable = stream.body_done && stream.body.empty() && idempotent(request.method);
  StreamBodySource request_body(connection, stream, timeouts.idle);
  std::unique_ptr<RequestRewrite> rewrite;  // made on a route that rewrites requests only
  if (!(stream.body_done && stream.body.empty()) &&
      RequestRewrite::wanted(*exchange.decision.route, request)) {
    rewrite = std::make_unique<RequestRewrite>();
    co_await rewrite->hold(request, request_body, loop.proxy.metrics);
  }
  const RequestHead& forwarded = rewrite ? rewrite->head() : request;
  head.clear();
  write_upstream_head(forwarded, exchange.decision.auth, connection.client().peer_address_text,
                      connection.client().stream.secure(), false, head);
  StreamRequestWriter writer(
      stream, state, exchange,
      rewrite ? static_cast<BodySource&>(*rewrite) : static_cast<BodySource&>(request_body),
      forwarded.chunked);
  UpstreamConnectionPtr server;
  std::chrono::steady_clock::time_point sent_at;
  UpstreamRequest sent =
      co_await request_upstream(loop, exchange, repeatable, writer, server, sent_at);
  stream.upstream = nullptr;
  if (sent.client_gone || stream.closed) {
    if (!stream.closed) {
      session.reset(stream, NGHTTP2_CANCEL);
      connection.flush();
    }
    co_return RelayOutcome{};
  }
  if (sent.failure == UpstreamFailure::none &&
      server->response->result() == http::status::switching_protocols) {
    sent.failure = UpstreamFailure::broken;  // HTTP/2 has no upgrade: none was asked for
  }
  if (sent.failure != UpstreamFailure::none) {
    co_return failed_before_response(sent.failure);
  }
  RelayOutcome outcome{.upstream_time = std::chrono::steady_clock::now() - sent_at};
  ResponseParser& response = *server->response;
  outcome.status = response.status();
  ClientFraming framing;
  if (const auto length = response.content_length()) {
    framing.length = *length;
  }
  exchange.begin_cost(response.head(), outcome.status);
  FieldList& fields = connection.response_fields();
  FieldListOut out(fields);
  write_client_head(response, kHttp11, framing, true, false, exchange.decision,
                    exchange.config().limits_headers, out);
  stream.out = {};
  stream.out_done = response.is_done();
  session.respond(stream, fields.list(), !response.is_done());
  connection.flush();
  // The body: each piece read into the chunk is lent to the stream until nghttp2 has taken it
  // all (as the client's window allows), then the next is read. A reset stream closes the
  // upstream connection, so that a read waiting on it ends.
  beast::flat_buffer& buffer = server->buffer;
  if (!response.is_done()) {
    stream.upstream = &server->stream;
    // Borrowed for the body alone: a stream waiting for its response holds none.
    const io::ChunkPool::Lease chunk = loop.chunks.borrow();
    MessageBodySource body(server->stream, buffer, response, std::span<char>(*chunk),
                           timeouts.upstream);
    StreamBodySink to_client(connection, stream, timeouts.idle);
    // No coroutine of its own while nothing waits.
    BodyCarry carried_body(body, to_client, exchange.cost);
    if (!carried_body.now()) {
      co_await carried_body.rest();
    }
    const Carried& carried = carried_body.result();
    stream.upstream = nullptr;
    if (carried.source_failed && !stream.closed) {
      outcome.failure = failure_of(carried.error);
      session.reset(stream, NGHTTP2_INTERNAL_ERROR);  // too late for a 502
      connection.flush();
      co_return outcome;
    }
    if (carried.error) {
      co_return outcome;  // the client went, or stopped reading (its stream reset)
    }
  }
  stream.upstream = nullptr;
  // Bytes after the response were not asked for: never taken for the next one.
  if (response.is_done() && response.keep_alive() && buffer.size() == 0 &&
      server->stream.socket().is_open()) {
    loop.pool.give_back(upstream, std::move(server));
  }
  co_return outcome;
}

}  // namespace sluice::http::h2
