// An HTTP/2 stream relayed to an HTTP/1.1 upstream.
#include "proxy/http/h2/stream_to_http1.hpp"

#include <array>
#include <chrono>
#include <string>

#include "proxy/http/h2/stream_answers.hpp"
#include "proxy/http/message_read.hpp"
#include "proxy/http/relay_heads.hpp"
#include "proxy/http/upstream_request.hpp"
#include "proxy/io/socket_io.hpp"

namespace sluice::http::h2 {
namespace {

/// Writes the stream's request to an HTTP/1.1 upstream: its head (in `state.relay_head`), then
/// its body as the stream receives it, chunked when it has no Content-Length, reopening the
/// stream's window by what went on.
class StreamRequestWriter final : public RequestWriter {
 public:
  StreamRequestWriter(Connection& connection, RequestStream& stream, RequestState& state,
                      const Exchange& exchange)
      : connection_(connection),
        stream_(stream),
        state_(state),
        exchange_(exchange),
        timeouts_(exchange.config().timeouts) {}

  void connected(io::Stream* server) noexcept override { stream_.upstream = server; }

  io::Awaitable<RequestWritten> write(io::Stream& server, bool) override {
    static constexpr std::string_view kLastChunk = "0\r\n\r\n";
    const RequestWritten client_gone{.error = {}, .client_failed = true};
    if (stream_.closed) {
      co_return client_gone;
    }
    const bool chunked = exchange_.request.chunked;
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
  RequestStream& stream_;
  RequestState& state_;
  const Exchange& exchange_;
  const config::Timeouts& timeouts_;
};

}  // namespace

io::Awaitable<RelayOutcome> relay_to_http1(Connection& connection, RequestStream& stream,
                                           RequestState& state, const Exchange& exchange) {
  LoopContext& loop = connection.loop();
  const io::ChunkPool::Lease chunk_lease = loop.chunks.borrow();
  const std::span<char> chunk(*chunk_lease);
  Session& session = connection.session();
  const config::Upstream& upstream = exchange.upstream();
  const config::Timeouts& timeouts = exchange.config().timeouts;
  const RequestHead& request = exchange.request;
  HeadText& head = state.relay_head;
  head.clear();
  write_upstream_head(request, connection.client().peer_address_text,
                      connection.client().stream.secure(), false, head);
  const bool repeatable = stream.body_done && stream.body.empty() && idempotent(request.method);
  StreamRequestWriter writer(connection, stream, state, exchange);
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
  FieldList& fields = connection.response_fields();
  FieldListOut out(fields);
  write_client_head(response, kHttp11, framing, true, false, exchange.decision,
                    exchange.config().limits_headers, out);
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

}  // namespace sluice::http::h2
