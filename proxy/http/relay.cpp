#include "proxy/http/relay.hpp"

#include <array>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <chrono>
#include <optional>
#include <random>
#include <string>

#include "proxy/http/beast_http.hpp"
#include "proxy/http/header_text.hpp"
#include "proxy/http/message_read.hpp"
#include "proxy/http/relay_heads.hpp"
#include "proxy/http/responses.hpp"
#include "proxy/http/tunnel.hpp"
#include "proxy/http/upstream_pool.hpp"
#include "proxy/http/upstream_request.hpp"
#include "proxy/io/socket_calls.hpp"
#include "proxy/io/socket_io.hpp"
#include "proxy/io/spare_pool.hpp"
#include "proxy/pipeline/http_text.hpp"

namespace sluice::http {
namespace {

constexpr std::size_t kRelayBuffer = io::kChunkBytes;

/// A message whose reading needs no wait, the usual one: no body, or a body of known length
/// that arrived whole with its header. Its head and body, gathered for one write without a
/// coroutine of pump's; any other message is left untouched for pump.
struct WholeMessage {
  std::array<net::const_buffer, 2> pieces{};

  template <class Parser>
  bool gather(Parser& parser, beast::flat_buffer& buffer, const HeadText& head,
              std::span<char> chunk) {
    pieces[0] = net::buffer(head.data(), head.size());
    if (parser.is_done()) {
      return true;
    }
    const auto length = parser.content_length_remaining();
    if (parser.chunked() || !length || *length > buffer.size() || *length > chunk.size()) {
      return false;
    }
    parser.body_into(chunk);
    beast::error_code ec;
    buffer.consume(parser.put(buffer.data(), ec));
    // A body of known length that is all there parses in one go; anything else is a surprise
    // that pump must not inherit half done.
    BOOST_ASSERT(!ec && parser.is_done());
    pieces[1] = net::buffer(chunk.data(), chunk.size() - parser.room_left());
    return !ec && parser.is_done();
  }
};

/// The side a message is read from: its stream, what was read from it and not parsed yet, and
/// the deadline of each read.
struct Source {
  io::Stream& stream;
  beast::flat_buffer& buffer;
  limiter::Duration timeout;
};

/// The side a message is written to, and the deadline of each write.
struct Sink {
  io::Stream& stream;
  limiter::Duration timeout;
};

/// How a pump ended: clear, or the error and which side it came from.
struct Pumped {
  beast::error_code error;
  bool read_failed = false;  ///< The source failed (else the sink, if `error`).
  bool head_sent = false;    ///< The source failed after the head went out: too late to answer.
};

/// Streams a message from `in` (its parser, past the header) to `out`, after `head`. Each write
/// carries what is ready: the head (the first time), a body piece in its chunk framing when
/// `chunked`, and the last chunk once the body is over. Each read and write has its own
/// deadline, so a large body may take as long as it keeps moving; a piece is passed on as soon
/// as it arrives (a streamed response is not held back).
template <class Parser>
io::Awaitable<Pumped> pump(Source in, Parser& parser, Sink out, const HeadText& head, bool chunked,
                           std::span<char> chunk) {
  static constexpr std::string_view kLastChunk = "0\r\n\r\n";
  const bool has_body = !parser.is_done();
  // Beast reads no more than the buffer's free capacity (at least 512 bytes): without room, a
  // body would move 512 bytes per system call.
  if (has_body && in.buffer.capacity() < kRelayBuffer) {
    in.buffer.reserve(std::min(kRelayBuffer, in.buffer.max_size()));
  }
  ChunkSizeLine size_line{};
  bool head_sent = false;
  do {
    std::size_t piece = 0;
    if (!parser.is_done()) {
      parser.body_into(chunk);
      beast::error_code ec;
      // A body piece that came in with what was read before is parsed without waiting.
      MessageRead read(in.buffer, parser, MessageRead<Parser::is_request::value>::Until::progress);
      if (read.wants_bytes(ec)) {
        in.stream.expires_after(in.timeout);
        do {
          auto [error, n] = co_await in.stream.async_read_some(read.room(), io::use_nothrow);
          read.received(n, error, ec);
        } while (read.wants_bytes(ec));
      }
      if (ec && ec != http::error::need_buffer) {
        co_return Pumped{.error = ec, .read_failed = true, .head_sent = head_sent};
      }
      piece = chunk.size() - parser.room_left();
    }
    std::array<net::const_buffer, 5> pieces{};  // unused ones stay empty
    std::size_t count = 0;
    if (!head_sent) {
      pieces[count++] = net::buffer(head.data(), head.size());
    }
    count =
        add_body_piece(pieces, count, std::string_view(chunk.data(), piece), chunked, size_line);
    if (chunked && has_body && parser.is_done()) {
      pieces[count++] = net::buffer(kLastChunk.data(), kLastChunk.size());
    }
    if (count > 0) {
      const io::SendStart start = send_now(out.stream, pieces);
      beast::error_code ec = start.error;
      if (!start.finished) {
        ec = co_await send_rest(out.stream, pieces, start.sent, out.timeout);
      }
      if (ec) {
        co_return Pumped{.error = ec};
      }
      head_sent = true;
    }
  } while (!parser.is_done());
  co_return Pumped{};
}

/// A body that could not be read for what it holds, not for the connection it comes on.
bool is_malformed(const beast::error_code& ec) noexcept {
  return ec.category() == beast::http::make_error_code(http::error::bad_chunk).category() &&
         ec != http::error::partial_message && ec != http::error::end_of_stream;
}

/// Writes an HTTP/1.1 client's request upstream: its head, then its body as the connection
/// receives it, after a 100 (Continue) when the client waits for one.
class ClientRequestWriter final : public RequestWriter {
 public:
  ClientRequestWriter(ClientConnection& downstream, const Exchange& exchange, std::span<char> chunk)
      : downstream_(downstream), exchange_(exchange), chunk_(chunk) {}

  void connected(io::Stream*) noexcept override {}

  io::Awaitable<RequestWritten> write(io::Stream& server, bool first_try) override {
    io::Stream& client = downstream_.stream;
    beast::flat_buffer& client_buffer = downstream_.state->buffer;
    RequestParser& parser = *downstream_.state->parser;
    const config::Timeouts& timeouts = exchange_.config().timeouts;
    const HeadText& head = downstream_.state->relay_head;
    if (first_try && !parser.is_done() && expects_continue(exchange_.request)) {
      // The client waits for this before it sends the body.
      static constexpr std::string_view kContinue = "HTTP/1.1 100 Continue\r\n\r\n";
      client.expires_after(timeouts.idle);
      auto [ec, n] = co_await net::async_write(client, net::buffer(kContinue), io::use_nothrow);
      if (ec) {
        co_return RequestWritten{.error = ec, .client_failed = true};
      }
    }
    if (WholeMessage whole; whole.gather(parser, client_buffer, head, chunk_)) {
      const io::SendStart start = send_now(server, whole.pieces);
      if (start.finished) {
        co_return RequestWritten{.error = start.error, .at_once = true};
      }
      co_return RequestWritten{
          .error = co_await send_rest(server, whole.pieces, start.sent, timeouts.upstream)};
    }
    const Pumped pumped =
        co_await pump(Source{client, client_buffer, timeouts.idle}, parser,
                      Sink{server, timeouts.upstream}, head, parser.chunked(), chunk_);
    co_return RequestWritten{.error = pumped.error,
                             .client_failed = pumped.read_failed,
                             .malformed = pumped.read_failed && is_malformed(pumped.error)};
  }

 private:
  ClientConnection& downstream_;
  const Exchange& exchange_;
  std::span<char> chunk_;
};

}  // namespace

io::Awaitable<RelayOutcome> relay(ClientConnection& downstream, const Exchange& exchange,
                                  LoopContext& loop) {
  if (exchange.upstream().http2) {
    if (loop.relay_to_http2 == nullptr) {
      co_return failed_before_response(UpstreamFailure::connect);
    }
    co_return co_await loop.relay_to_http2(downstream, exchange, loop);
  }
  io::Stream& client = downstream.stream;
  beast::flat_buffer& client_buffer = downstream.state->buffer;
  RequestParser& parser = *downstream.state->parser;
  HeadText& head = downstream.state->relay_head;
  const pipeline::Decision& decision = exchange.decision;
  const config::ProxyConfig& config = exchange.config();
  const config::Timeouts& timeouts = config.timeouts;
  const unsigned version = parser.version();
  // RFC 9110 §7.8: ignored in HTTP/1.0; and `Connection: upgrade` without an Upgrade field (all
  // Beast's upgrade() looks at) asks for no protocol.
  const bool upgrade = parser.upgrade() && version >= kHttp11 &&
                       !parser.head().value_of(http::field::upgrade).empty();
  bool keep_alive = exchange.keep_alive;
  head.clear();
  write_upstream_head(exchange.request, downstream.peer_address_text, client.secure(), upgrade,
                      head);
  const io::ChunkPool::Lease chunk = loop.chunks.borrow();
  // Without a body, a request that fails on a parked connection can be sent again.
  const bool repeatable = parser.is_done() && idempotent(parser.method());
  ClientRequestWriter writer(downstream, exchange, std::span<char>(*chunk));
  UpstreamConnectionPtr connection;
  std::chrono::steady_clock::time_point sent_at;
  const UpstreamRequest sent =
      co_await request_upstream(loop, exchange, repeatable, writer, connection, sent_at);
  if (sent.client_gone) {
    if (sent.malformed) {  // a bad chunk, found after the head went upstream: still a 400
      co_return RelayOutcome{.answer = http::status::bad_request};
    }
    co_return RelayOutcome{};
  }
  UpstreamFailure failure = sent.failure;
  const bool switching = failure == UpstreamFailure::none &&
                         connection->response->result() == http::status::switching_protocols;
  // A protocol switch nobody asked for, or that does not say to what.
  if (switching &&
      (!upgrade || connection->response->head().value_of(http::field::upgrade).empty())) {
    failure = UpstreamFailure::broken;
  }
  // Transfer codings besides chunked cannot reach an HTTP/1.0 client (RFC 9112 §6.1).
  const bool codings =
      failure == UpstreamFailure::none && connection->response->transfer_codings().others();
  if (codings && version < kHttp11) {
    failure = UpstreamFailure::broken;
  }
  if (failure != UpstreamFailure::none) {
    co_return failed_before_response(failure);
  }
  io::Stream& server = connection->stream;
  beast::flat_buffer& server_buffer = connection->buffer;
  RelayOutcome outcome;
  outcome.upstream_time = std::chrono::steady_clock::now() - sent_at;
  ResponseParser& response = *connection->response;
  outcome.status = response.status();
  head.clear();
  if (switching) {
    write_client_head(response, version, {}, false, true, decision, config.limits_headers, head);
    client.expires_after(timeouts.idle);
    auto [ec, n] =
        co_await net::async_write(client, net::buffer(head.data(), head.size()), io::use_nothrow);
    if (!ec) {
      co_await tunnel(client, client_buffer, server, server_buffer, timeouts.idle);
    }
    co_return outcome;  // an upgraded connection is never reused
  }
  // How the body goes on. A 204 has no Content-Length or Transfer-Encoding (RFC 9112 §6.1,
  // §6.2). A body of unknown length is chunked anew for HTTP/1.1 and sent until close to
  // HTTP/1.0. The upstream's codings besides chunked go on as they came: chunked anew when
  // chunked was last, else until close (§6.3, rule 4).
  ClientFraming framing;
  bool until_close = false;
  if (response.status() != 204) {
    const bool unknown_length =
        response.chunked() || (!response.content_length() && !response.is_done());
    framing.chunked = version >= kHttp11 && (response.chunked() || (unknown_length && !codings));
    framing.codings = codings;
    if (const auto length = response.content_length()) {
      framing.length = *length;
    }
    until_close = unknown_length && !framing.chunked;
  }
  keep_alive = keep_alive && !until_close;
  write_client_head(response, version, framing, keep_alive, false, decision, config.limits_headers,
                    head);
  bool upstream_failed = false;
  beast::error_code ec;
  if (WholeMessage whole;
      !framing.chunked && whole.gather(response, server_buffer, head, std::span<char>(*chunk))) {
    const io::SendStart start = send_now(client, whole.pieces);
    ec = start.error;
    if (!start.finished) {
      ec = co_await send_rest(client, whole.pieces, start.sent, timeouts.idle);
    }
  } else {
    const Pumped pumped =
        co_await pump(Source{server, server_buffer, timeouts.upstream}, response,
                      Sink{client, timeouts.idle}, head, framing.chunked, std::span<char>(*chunk));
    if (pumped.read_failed && !pumped.head_sent) {  // a body broken from its start: 502 (504)
      co_return failed_before_response(failure_of(pumped.error));
    }
    ec = pumped.error;
    upstream_failed = pumped.read_failed;
  }
  // Bytes after the response were not asked for: never taken for the next one (RFC 9112 §6.3).
  if (!ec && response.keep_alive() && response.is_done() && server_buffer.size() == 0) {
    loop.pool.give_back(exchange.upstream(), std::move(connection));
  }
  if (ec && upstream_failed) {
    outcome.failure = failure_of(ec);
  }
  outcome.keep_alive = !ec && keep_alive;
  co_return outcome;
}

}  // namespace sluice::http
