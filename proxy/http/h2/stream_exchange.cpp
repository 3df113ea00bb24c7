// What one HTTP/2 stream is: its request as an HTTP/1.1 head, through the pipeline like any
// request, then the proxy's own answer or the upstream's, relayed over HTTP/1.1.
#include <boost/asio/co_spawn.hpp>
#include <chrono>
#include <cstring>
#include <optional>
#include <string>

#include "proxy/http/grpc_status.hpp"
#include "proxy/http/h2/connection.hpp"
#include "proxy/http/h2/upstream_session.hpp"
#include "proxy/http/message_read.hpp"
#include "proxy/http/relay.hpp"
#include "proxy/http/relay_heads.hpp"
#include "proxy/http/responses.hpp"
#include "proxy/http/upstream_request.hpp"
#include "proxy/io/socket_io.hpp"
#include "proxy/pipeline/http_text.hpp"
#include "proxy/tls/contexts.hpp"

namespace sluice::http::h2 {
namespace {

/// A gRPC call (SPEC §7): its Content-Type is application/grpc, or application/grpc+proto...
bool is_grpc(const HeadFields& head) noexcept {
  static constexpr std::string_view kGrpc = "application/grpc";
  const std::string_view type = head.value_of(http::field::content_type);
  return type.size() >= kGrpc.size() &&
         pipeline::equal_ignoring_case(type.substr(0, kGrpc.size()), kGrpc);
}

/// The gRPC status for an answer of the proxy's own (SPEC §7): limited is RESOURCE_EXHAUSTED,
/// denied or banned PERMISSION_DENIED; the rest as gRPC maps HTTP statuses.
GrpcStatus grpc_status(const pipeline::Decision& decision, unsigned http_status) noexcept {
  if (decision.outcome == pipeline::Outcome::limited) {
    return GrpcStatus::resource_exhausted;
  }
  if (decision.outcome == pipeline::Outcome::denied && http_status == 403) {
    return GrpcStatus::permission_denied;
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

/// grpc-timeout (gRPC over HTTP/2): up to 8 digits and a unit, H M S m u n; nullopt when
/// absent or malformed.
std::optional<limiter::Duration> grpc_timeout(std::string_view text) noexcept {
  if (text.size() < 2 || text.size() > 9) {
    return std::nullopt;
  }
  std::int64_t amount = 0;
  for (const char digit : text.substr(0, text.size() - 1)) {
    if (digit < '0' || digit > '9') {
      return std::nullopt;
    }
    amount = amount * 10 + (digit - '0');
  }
  using namespace std::chrono;
  switch (text.back()) {
    case 'H':
      return hours(amount);
    case 'M':
      return minutes(amount);
    case 'S':
      return seconds(amount);
    case 'm':
      return milliseconds(amount);
    case 'u':
      return microseconds(amount);
    case 'n':
      return duration_cast<limiter::Duration>(nanoseconds(amount));
    default:
      return std::nullopt;
  }
}

/// Waits until the stream is closed, up to `timeout` since it last changed; then resets it. A
/// stream answered whole while its client still sends a body it no longer needs is reset with
/// NO_ERROR (RFC 9113 §8.1), after the answer's last frame: else it would hold a place among
/// the connection's streams until the client ends the body.
io::Awaitable<void> await_close(Connection& connection, Stream& stream, limiter::Duration timeout) {
  while (!stream.closed) {
    if (stream.answered && !stream.body_done) {
      connection.session().reset(stream, NGHTTP2_NO_ERROR);
      connection.flush();
      co_return;
    }
    const bool changed = co_await stream.changed.wait_for(timeout);
    if (!changed) {
      connection.session().reset(stream, NGHTTP2_CANCEL);
      connection.flush();
      co_return;
    }
  }
}

/// Answers the stream with `state.own` (as the HTTP/1 session would answer), the gRPC way
/// for a gRPC call: HTTP 200 and a trailers-only response whose grpc-status says why
/// (`grpc_code`, or what the decision and status say). The request's body is not wanted:
/// dropped as it comes.
io::Awaitable<void> answer_own(Connection& connection, Stream& stream, RequestState& state,
                               bool grpc, limiter::Duration timeout,
                               std::optional<GrpcStatus> grpc_code = std::nullopt) {
  Session& session = connection.session();
  FieldList& fields = connection.response_fields();
  const std::string_view head(state.own.head.data(), state.own.head.size());
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
    const std::string_view content = state.own.content();
    stream.out = std::span<const char>(content.data(), content.size());
    stream.out_done = true;
    session.respond(stream, fields.list(), !content.empty());
  }
  connection.flush();
  co_await await_close(connection, stream, timeout);  // the body is lent until it is sent
}

/// Until the stream has body bytes to pass on, its body is over, or it closed; false when the
/// client sent nothing for `timeout`.
io::Awaitable<bool> await_body(Stream& stream, limiter::Duration timeout) {
  while (stream.body.empty() && !stream.body_done && !stream.closed) {
    const bool changed = co_await stream.changed.wait_for(timeout);
    if (!changed) {
      co_return false;
    }
  }
  co_return true;
}

/// Writes the stream's request to an HTTP/1.1 upstream: its head (in `state.relay_head`), then
/// its body as the stream receives it, chunked when it has no Content-Length, reopening the
/// stream's window by what went on.
class StreamRequestWriter final : public RequestWriter {
 public:
  StreamRequestWriter(Connection& connection, Stream& stream, RequestState& state,
                      const config::Timeouts& timeouts)
      : connection_(connection), stream_(stream), state_(state), timeouts_(timeouts) {}

  void connected(io::Stream* server) noexcept override { stream_.upstream = server; }

  io::Awaitable<RequestWritten> write(io::Stream& server, bool) override {
    static constexpr std::string_view kLastChunk = "0\r\n\r\n";
    const RequestWritten client_gone{.error = {}, .client_failed = true};
    if (stream_.closed) {
      co_return client_gone;
    }
    const bool chunked = state_.parser->chunked();
    const bool has_body = !(stream_.body_done && stream_.body.empty());
    const HeadText& head = state_.relay_head;
    std::array<net::const_buffer, 5> pieces{net::buffer(head.data(), head.size())};
    std::size_t count = 1;
    std::string piece;  // the body bytes on their way, swapped with the stream's buffer
    ChunkSizeLine size_line{};
    do {
      if (has_body) {
        const bool came = co_await await_body(stream_, timeouts_.idle);
        if (!came || stream_.closed) {
          co_return client_gone;
        }
        piece.clear();
        piece.swap(stream_.body);
        count = add_body_piece(pieces, count, piece, chunked, size_line);
        if (chunked && stream_.body_done && stream_.body.empty()) {
          pieces[count++] = net::buffer(kLastChunk);
        }
      }
      const beast::error_code ec =
          co_await io::send(server, std::span(pieces.data(), count), timeouts_.upstream);
      if (!piece.empty()) {
        // Passed on, or never will be (the upstream failed, or the reset stream closed it): the
        // connection's window gets them back either way, else it would shrink for good.
        connection_.session().consume(stream_, piece.size());
        connection_.flush();
      }
      if (ec) {
        co_return RequestWritten{.error = ec};
      }
      pieces = {};
      count = 0;
    } while (has_body && !(stream_.body_done && stream_.body.empty()));
    co_return RequestWritten{};
  }

 private:
  Connection& connection_;
  Stream& stream_;
  RequestState& state_;
  const config::Timeouts& timeouts_;
};

/// Sends the request to its HTTP/1.1 upstream and the response back on the stream: on a parked
/// connection when there is one (a request without a body that fails on it is sent again, once,
/// on a new one, as the HTTP/1 relay does), its body through the loop's chunk as the client's
/// window lets it go.
io::Awaitable<RelayOutcome> relay_to_http1(Connection& connection, Stream& stream,
                                           RequestState& state, const Exchange& exchange) {
  LoopContext& loop = connection.loop();
  const io::ChunkPool::Lease chunk_lease = loop.chunks.borrow();
  const std::span<char> chunk(*chunk_lease);
  Session& session = connection.session();
  const config::Upstream& upstream = exchange.upstream();
  const config::Timeouts& timeouts = exchange.config().timeouts;
  const RequestParser& request = *state.parser;
  HeadText& head = state.relay_head;
  head.clear();
  write_upstream_head(request, connection.client().peer_address_text,
                      connection.client().stream.secure(), false, head);
  const bool repeatable = stream.body_done && stream.body.empty() && idempotent(request.method());
  StreamRequestWriter writer(connection, stream, state, timeouts);
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
  head.clear();
  write_client_head(response, kHttp11, framing, true, false, exchange.decision,
                    exchange.config().limits_headers, head);
  FieldList& fields = connection.response_fields();
  fields.read(std::string_view(head.data(), head.size()));
  stream.out = {};
  stream.out_done = response.is_done();
  session.respond(stream, fields.list(), !response.is_done());
  connection.flush();
  // The body: each piece read into the chunk is lent to the stream until nghttp2 has taken it
  // all (as the client's window allows), then the next is read.
  beast::flat_buffer& buffer = server->buffer;
  if (!response.is_done() && buffer.capacity() < chunk.size()) {
    buffer.reserve(std::min(chunk.size(), buffer.max_size()));
  }
  stream.upstream = &server->stream;
  while (!response.is_done() && !stream.closed) {
    response.body_into(chunk);
    beast::error_code ec;
    MessageRead read(buffer, response, MessageRead<false>::Until::progress);
    if (read.wants_bytes(ec)) {
      server->stream.expires_after(timeouts.upstream);
      do {
        auto [error, n] = co_await server->stream.async_read_some(read.room(), io::use_nothrow);
        read.received(n, error, ec);
      } while (read.wants_bytes(ec));
    }
    if (ec && ec != http::error::need_buffer) {
      if (!stream.closed) {
        outcome.failure =
            ec == beast::error::timeout ? UpstreamFailure::timeout : UpstreamFailure::broken;
        stream.upstream = nullptr;
        session.reset(stream, NGHTTP2_INTERNAL_ERROR);  // too late for a 502
        connection.flush();
      }
      co_return outcome;
    }
    stream.out = std::span<const char>(chunk.data(), chunk.size() - response.room_left());
    stream.out_done = response.is_done();
    session.resume(stream);
    connection.flush();
    while (!stream.out.empty() && !stream.closed) {
      const bool changed = co_await stream.changed.wait_for(timeouts.idle);
      if (!changed) {
        stream.upstream = nullptr;
        session.reset(stream, NGHTTP2_CANCEL);  // the client stopped reading it
        connection.flush();
        co_return outcome;
      }
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

/// The response head of `call` as the client gets it: the upstream's fields but the limit
/// fields, which the proxy writes itself (as for an HTTP/1.1 upstream).
void add_limit_fields(FieldList& head, const pipeline::Decision& decision,
                      config::LimitsHeaders mode) {
  if (!writes_limit_headers(decision, mode)) {
    return;
  }
  head.erase_if([mode](std::string_view name) { return is_limit_field(name, mode); });
  HeadText lines;
  write_limit_headers(lines, decision, mode);
  head.add_lines(std::string_view(lines.data(), lines.size()));
}

/// Relays the stream to an HTTP/2 upstream (h2c://, h2://) on one of the loop's multiplexed
/// sessions: the request's fields (with the forwarding fields, as for HTTP/1.1) and its body as
/// it comes; the response's head, body and trailers as they come, each side's window reopened by
/// what the other took. One coroutine waits for both sides on the client stream's signal. The
/// response head must come within `timeouts.upstream`, or a gRPC call's grpc-timeout if shorter
/// (then `deadline_passed`: the call fails with DEADLINE_EXCEEDED, as its deadline says).
io::Awaitable<RelayOutcome> relay_to_http2(Connection& connection,
                                           const std::shared_ptr<Stream>& client,
                                           RequestState& state, const Exchange& exchange, bool grpc,
                                           bool& deadline_passed) {
  Stream& stream = *client;
  LoopContext& loop = connection.loop();
  Session& session = connection.session();
  const config::Upstream& upstream = exchange.upstream();
  const config::Timeouts& timeouts = exchange.config().timeouts;
  limiter::Duration deadline = timeouts.upstream;
  const std::optional<limiter::Duration> call_timeout =
      grpc ? grpc_timeout(state.request_head.value_of("grpc-timeout")) : std::nullopt;
  if (call_timeout) {
    deadline = std::min(deadline, *call_timeout);
  }
  const auto started = std::chrono::steady_clock::now();
  const auto give_up_at = started + deadline;
  if (!loop.http2_upstreams) {
    loop.http2_upstreams = std::make_shared<UpstreamSessions>();
  }
  beast::error_code connect_error;
  const std::shared_ptr<UpstreamSession> upstream_session =
      co_await loop.http2_upstreams->session_for(
          upstream, loop.pool, exchange.generation.tls->upstream.get(),
          exchange.config().upstream_tls, timeouts.connect, connect_error);
  if (stream.closed) {
    co_return RelayOutcome{};
  }
  if (!upstream_session) {
    co_return failed_before_response(UpstreamFailure::connect);
  }
  HeadText& head = state.relay_head;
  head.clear();
  write_upstream_head(*state.parser, connection.client().peer_address_text,
                      connection.client().stream.secure(), false, head);
  FieldList& fields = connection.response_fields();
  fields.read_request(std::string_view(head.data(), head.size()), upstream.tls ? "https" : "http");
  if (grpc) {
    fields.add("te", "trailers");  // gRPC servers want it; HTTP/1.1's relay drops TE
  }
  // The call wakes the client stream's signal (an aliasing pointer keeps the stream).
  const auto call = std::make_shared<Call>(std::shared_ptr<io::Signal>(client, &client->changed));
  const bool with_body = !(stream.body_done && stream.body.empty());
  if (!upstream_session->begin(call, fields.list(), with_body)) {
    co_return failed_before_response(UpstreamFailure::broken);
  }
  RelayOutcome outcome;
  std::string going_up;    // request body bytes lent to the upstream
  std::string going_down;  // response body bytes lent to the client
  bool head_sent = false;
  bool body_down = false;  // the response has a body (or trailers) to pass on
  for (;;) {
    if (stream.closed) {  // reset by the client, or its connection went
      upstream_session->cancel(*call);
      co_return outcome;
    }
    if (with_body && !call->out_done && call->out.empty()) {
      if (!going_up.empty()) {
        session.consume(stream, going_up.size());
        connection.flush();
        going_up.clear();
      }
      if (!stream.body.empty() || stream.body_done) {
        going_up.swap(stream.body);
        call->out = std::span<const char>(going_up);
        call->out_done = stream.body_done && stream.body.empty();
        upstream_session->resume(*call);
      }
    }
    if (!head_sent && call->head_done) {
      head_sent = true;
      outcome.status = call->head.status();
      outcome.upstream_time = std::chrono::steady_clock::now() - started;
      add_limit_fields(call->head, exchange.decision, exchange.config().limits_headers);
      body_down = !(call->body_done && call->body.empty());
      stream.out = {};
      stream.out_done = !body_down;
      session.respond(stream, call->head.list(), body_down);
      connection.flush();
    }
    if (head_sent && body_down && stream.out.empty() && !stream.out_done) {
      if (!going_down.empty()) {
        upstream_session->consume(*call, going_down.size());
        going_down.clear();
      }
      if (!call->body.empty() || call->body_done) {
        going_down.swap(call->body);
        stream.out = std::span<const char>(going_down);
        if (call->body_done && call->body.empty()) {
          stream.out_done = true;
          if (!call->trailers.list().empty()) {
            stream.trailers = &call->trailers.list();
          }
        }
        session.resume(stream);
        connection.flush();
      }
    }
    if (stream.out_done && stream.out.empty()) {
      co_await await_close(connection, stream, timeouts.idle);  // until the last bytes went
      co_return outcome;
    }
    if (call->closed && !call->body_done) {  // the upstream reset it, or its connection went
      outcome.failure = UpstreamFailure::broken;
      if (!head_sent) {
        co_return failed_before_response(UpstreamFailure::broken);
      }
      session.reset(stream, NGHTTP2_INTERNAL_ERROR);
      connection.flush();
      co_return outcome;
    }
    const auto now = std::chrono::steady_clock::now();
    const limiter::Duration wait =
        head_sent && !call_timeout
            ? timeouts.idle
            : std::chrono::duration_cast<limiter::Duration>(give_up_at - now);
    bool changed = false;
    if (wait > limiter::Duration::zero()) {
      changed = co_await stream.changed.wait_for(wait);
    }
    if (!changed) {
      upstream_session->cancel(*call);
      outcome.failure = UpstreamFailure::timeout;
      if (!head_sent) {
        deadline_passed = call_timeout.has_value();
        co_return failed_before_response(UpstreamFailure::timeout);
      }
      session.reset(stream, NGHTTP2_CANCEL);
      connection.flush();
      co_return outcome;
    }
  }
}

/// Writes the HTTP/1.1 head of the stream's request into `state.buffer` and parses it as the
/// HTTP/1 session parses one: the same checks, and a RequestParser for the rest of the proxy.
bool parse_request(const Stream& stream, RequestState& state, beast::error_code& ec) {
  HeadText& text = state.relay_head;
  text.clear();
  write_request_head(stream, text);
  state.buffer.clear();
  const net::mutable_buffer room = state.buffer.prepare(text.size());
  std::memcpy(room.data(), text.data(), text.size());
  state.buffer.commit(text.size());
  state.request_head.trim();
  RequestParser& parser = state.parser.emplace(state.request_head);
  parser.header_limit(kMaxHeaderBytes);
  parser.body_limit(boost::none);
  parser.put(state.buffer.data(), ec);
  return !ec && parser.is_header_done();
}

/// The client side of an exchange on an HTTP/2 stream: the request its fields made, the
/// answer on the stream (the gRPC way for a gRPC call), the relay to either kind of upstream.
class StreamDownstream final : public Downstream {
 public:
  StreamDownstream(const std::shared_ptr<Connection>& connection,
                   const std::shared_ptr<Stream>& stream, RequestState& state)
      : connection_(connection),
        stream_(stream),
        state_(state),
        grpc_(is_grpc(state.request_head)) {}

  pipeline::RequestView request_view() const noexcept override {
    return http::request_view(state_, connection_->client());
  }
  bool gone() const noexcept override { return stream_->closed; }

  OwnResponse& own() noexcept override { return state_.own; }
  bool send_own_now(Exchange&) override {
    return false;  // the stream is answered once its frames went: always awaited
  }
  io::Awaitable<void> send_own(Exchange& exchange) override {
    return answer_own(
        *connection_, *stream_, state_, grpc_, exchange.config().timeouts.idle,
        deadline_passed_ ? std::optional(GrpcStatus::deadline_exceeded) : std::nullopt);
  }

  io::Awaitable<RelayOutcome> relay(Exchange& exchange) override {
    return exchange.upstream().http2
               ? relay_to_http2(*connection_, stream_, state_, exchange, grpc_, deadline_passed_)
               : relay_to_http1(*connection_, *stream_, state_, exchange);
  }

 private:
  const std::shared_ptr<Connection>& connection_;
  const std::shared_ptr<Stream>& stream_;
  RequestState& state_;
  const bool grpc_;
  bool deadline_passed_ = false;  ///< The gRPC call's own deadline ran out upstream.
};

}  // namespace

io::Awaitable<void> serve_stream(std::shared_ptr<Connection> connection,
                                 std::shared_ptr<Stream> stream) {
  LoopContext& loop = connection->loop();
  Stream& s = *stream;
  const std::shared_ptr<const live::Generation> generation = connection->generation();
  const config::Timeouts& timeouts = generation->config->timeouts;
  const RequestStatePool::Lease lease = loop.request_states.borrow();
  RequestState& state = *lease;
  beast::error_code ec;
  if (s.too_large || !parse_request(s, state, ec)) {
    problem_response(state.own,
                     s.too_large ? http::status::request_header_fields_too_large
                                 : (ec ? state.parser->refusal() : http::status::bad_request),
                     kHttp11, true);
    state.own.to_head = s.method == "HEAD";
    co_await answer_own(*connection, s, state, false, timeouts.idle);
    connection->stream_done();
    co_return;
  }
  StreamDownstream downstream(connection, stream, state);
  Exchange exchange{.generation = *generation,
                    .request = *state.parser,
                    .decision = state.decision,
                    .charges = state.charges,
                    .charged = state.charged,
                    .keep_alive = true,
                    .started = std::chrono::steady_clock::now()};
  co_await serve_exchange(downstream, exchange, loop);
  connection->stream_done();
}

}  // namespace sluice::http::h2
