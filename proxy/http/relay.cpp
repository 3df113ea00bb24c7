#include "proxy/http/relay.hpp"

#include <fmt/format.h>

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
#include "proxy/http/responses.hpp"
#include "proxy/http/tunnel.hpp"
#include "proxy/http/upstream_pool.hpp"
#include "proxy/io/socket_calls.hpp"
#include "proxy/io/socket_io.hpp"
#include "proxy/io/spare_pool.hpp"
#include "proxy/pipeline/http_text.hpp"
#include "proxy/tls/contexts.hpp"

namespace sluice::http {
namespace {

constexpr std::size_t kRelayBuffer = io::kChunkBytes;

/// The connection options of a message: the names listed in its Connection fields, all of them
/// (RFC 9110 §7.6.1; a field may be repeated, §5.3).
class ConnectionOptions {
 public:
  explicit ConnectionOptions(const HeadFields& fields) noexcept : fields_(fields) {
    while (first_ < fields.size() && fields.id(first_) != http::field::connection) {
      ++first_;
    }
  }

  bool names(std::string_view name) const noexcept {
    for (std::size_t index = first_; index < fields_.size(); ++index) {
      if (fields_.id(index) == http::field::connection && lists(fields_.at(index).value, name)) {
        return true;
      }
    }
    return false;
  }

 private:
  static bool lists(std::string_view options, std::string_view name) noexcept {
    for (std::size_t start = 0; start < options.size();) {
      const std::size_t comma = std::min(options.find(',', start), options.size());
      if (pipeline::equal_ignoring_case(
              pipeline::trim_whitespace(options.substr(start, comma - start)), name)) {
        return true;
      }
      start = comma + 1;
    }
    return false;
  }

  const HeadFields& fields_;
  std::size_t first_ = 0;  ///< The first Connection field.
};

/// Fields not forwarded as received: those that belong to one connection (RFC 9110 §7.6.1) and
/// those its Connection fields name, and the framing (Content-Length, Transfer-Encoding), which
/// the proxy writes itself. A connection option cannot remove Host.
bool dropped(http::field field, std::string_view name, const ConnectionOptions& options) {
  switch (field) {
    case http::field::connection:
    case http::field::keep_alive:
    case http::field::proxy_connection:
    case http::field::proxy_authenticate:
    case http::field::proxy_authorization:
    case http::field::te:
    case http::field::trailer:
    case http::field::transfer_encoding:
    case http::field::upgrade:
    case http::field::content_length:
      return true;
    case http::field::host:
      return false;
    default:
      return options.names(name);
  }
}

using RequestId = std::array<char, 32>;

/// 64 random bits per call: splitmix64 over a per-thread state seeded from the system's entropy.
/// Cheap enough for every request (the state needs no thread_local initialization guard); good
/// for telling requests apart in logs, not for secrets.
std::uint64_t next_random() {
  thread_local std::uint64_t state = 0;
  if (state == 0) {
    std::random_device entropy;
    state = (std::uint64_t{entropy()} << 32 | entropy()) | 1;
  }
  state += 0x9e3779b97f4a7c15;
  std::uint64_t z = state;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9;
  z = (z ^ (z >> 27)) * 0x94d049bb133111eb;
  return z ^ (z >> 31);
}

RequestId new_request_id() {
  static constexpr char kHex[] = "0123456789abcdef";
  RequestId id;
  for (std::size_t i = 0; i < id.size(); i += 16) {
    std::uint64_t bits = next_random();
    for (std::size_t j = 0; j < 16; ++j, bits >>= 4) {
      id[i + j] = kHex[bits & 0xf];
    }
  }
  return id;
}

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

/// Reads into `read` what `stream`'s socket holds, without waiting; false when it holds nothing.
/// For a response's body: the upstream's end of stream, which ends a body of unknown length or
/// cuts one short, may have come with the last bytes read, and then no epoll event would tell
/// a drain-aware read of it (io/drain_aware_read.hpp) until the upstream timeout.
template <bool isRequest>
bool receive_now(io::Stream& stream, MessageRead<isRequest>& read, beast::error_code& ec) {
  if (stream.secure()) {
    return false;  // the bytes are encrypted; TLS's own reads try the socket at once
  }
  beast::error_code error;
  const net::mutable_buffer room = read.room();
  const std::size_t n =
      io::receive_some(stream.socket().native_handle(), room.data(), room.size(), error);
  if (error == net::error::would_block) {
    return false;
  }
  read.received(n, error, ec);
  return true;
}

/// Streams a message from `in` (its parser, past the header) to `out`, after `head`. Each write
/// carries what is ready: the head (the first time), a body piece in its chunk framing when
/// `chunked`, and the last chunk once the body is over. Each read and write has its own
/// deadline, so a large body may take as long as it keeps moving; a piece is passed on as soon
/// as it arrives (a streamed response is not held back).
template <class Parser>
io::Awaitable<Pumped> pump(Source in, Parser& parser, Sink out, const HeadText& head, bool chunked,
                           std::span<char> chunk) {
  static constexpr std::string_view kCrlf = "\r\n";
  static constexpr std::string_view kLastChunk = "0\r\n\r\n";
  const bool has_body = !parser.is_done();
  // Beast reads no more than the buffer's free capacity (at least 512 bytes): without room, a
  // body would move 512 bytes per system call.
  if (has_body && in.buffer.capacity() < kRelayBuffer) {
    in.buffer.reserve(std::min(kRelayBuffer, in.buffer.max_size()));
  }
  std::array<char, 24> size_line{};
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
          if constexpr (!Parser::is_request::value) {
            if (receive_now(in.stream, read, ec)) {
              continue;
            }
          }
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
    if (piece > 0) {
      if (chunked) {
        const auto end = fmt::format_to(size_line.data(), "{:x}\r\n", piece);
        pieces[count++] =
            net::buffer(size_line.data(), static_cast<std::size_t>(end - size_line.data()));
      }
      pieces[count++] = net::buffer(chunk.data(), piece);
      if (chunked) {
        pieces[count++] = net::buffer(kCrlf.data(), kCrlf.size());
      }
    }
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

/// RFC 9110 §9.2.2: methods whose effect is the same if a request is made once or more.
bool idempotent(http::verb method) noexcept {
  switch (method) {
    case http::verb::get:
    case http::verb::head:
    case http::verb::options:
    case http::verb::trace:
    case http::verb::put:
    case http::verb::delete_:
      return true;
    default:
      return false;
  }
}

UpstreamFailure failure_of(const beast::error_code& ec) noexcept {
  return ec == beast::error::timeout ? UpstreamFailure::timeout : UpstreamFailure::broken;
}

/// Answers the client with a status of the proxy's own, and closes: 502 or 504 for an upstream
/// that failed (`failure`), 400 for a request whose body turned out malformed.
io::Awaitable<RelayOutcome> answer_and_close(io::Stream& client, http::status status,
                                             UpstreamFailure failure, unsigned version,
                                             const pipeline::Decision& decision,
                                             const config::ProxyConfig& config) {
  OwnResponse response;
  problem_response(response, status, version, false, &decision, config.limits_headers);
  co_await net::async_write(client, response.buffers(), io::use_nothrow);
  co_return RelayOutcome{.keep_alive = false,
                         .status = static_cast<unsigned>(status),
                         .failure = failure,
                         .upstream_time = {}};
}

io::Awaitable<RelayOutcome> fail(io::Stream& client, UpstreamFailure failure, unsigned version,
                                 const pipeline::Decision& decision,
                                 const config::ProxyConfig& config) {
  return answer_and_close(client,
                          failure == UpstreamFailure::timeout ? http::status::gateway_timeout
                                                              : http::status::bad_gateway,
                          failure, version, decision, config);
}

/// A body that could not be read for what it holds, not for the connection it comes on.
bool is_malformed(const beast::error_code& ec) noexcept {
  return ec.category() == beast::http::make_error_code(http::error::bad_chunk).category() &&
         ec != http::error::partial_message && ec != http::error::end_of_stream;
}

bool is_forwarding_field(std::string_view name) noexcept {
  return pipeline::equal_ignoring_case(name, "X-Forwarded-For") ||
         pipeline::equal_ignoring_case(name, "X-Forwarded-Proto") ||
         pipeline::equal_ignoring_case(name, "X-Forwarded-Host");
}

/// The request head as the upstream gets it: HTTP/1.1, persistent, end-to-end fields only, plus
/// the forwarding fields (the proxy's replace the client's, but X-Forwarded-For is appended
/// to) and the framing: one Content-Length, or chunked. `Expect` is dropped: the proxy has
/// answered it.
void write_upstream_head(const RequestParser& request, std::string_view client_address, bool secure,
                         bool upgrade, HeadText& head) {
  write_request_line(head, request.method_string(), request.target());
  const HeadFields& fields = request.head();
  const ConnectionOptions options(fields);
  const std::string_view host = fields.value_of(http::field::host);
  bool request_id = false;
  for (std::size_t index = 0; index < fields.size(); ++index) {
    const http::field id = fields.id(index);
    const pipeline::Header& field = fields.at(index);
    if (dropped(id, field.name, options) || id == http::field::expect ||
        is_forwarding_field(field.name)) {
      continue;
    }
    request_id = request_id || pipeline::equal_ignoring_case(field.name, "X-Request-Id");
    write_field(head, field.name, field.value);
  }
  if (const std::string_view forwarded_for = fields.value_of("X-Forwarded-For");
      forwarded_for.empty()) {
    write_field(head, "X-Forwarded-For", client_address);
  } else {
    fmt::format_to(std::back_inserter(head), "X-Forwarded-For: {}, {}\r\n", forwarded_for,
                   client_address);
  }
  append(head, secure ? "X-Forwarded-Proto: https\r\n" : "X-Forwarded-Proto: http\r\n");
  if (!host.empty()) {
    write_field(head, "X-Forwarded-Host", host);
  }
  if (!request_id) {
    const RequestId id = new_request_id();
    write_field(head, "X-Request-Id", std::string_view(id.data(), id.size()));
  }
  if (request.chunked()) {
    append(head, "Transfer-Encoding: chunked\r\n");
  } else if (const auto length = request.content_length()) {
    write_field(head, "Content-Length", *length);
  }
  if (upgrade) {
    write_field(head, "Upgrade", fields.value_of(http::field::upgrade));
    append(head, "Connection: upgrade\r\n");
  }
  end_head(head);
}

/// How a response's body goes to the client, and the fields that say so.
struct ClientFraming {
  bool chunked = false;  ///< Re-chunked by the proxy.
  bool codings = false;  ///< The upstream's Transfer-Encoding fields go as they are: codings
                         ///< besides chunked, either last (re-chunked) or not (until close).
  std::optional<std::uint64_t> length;  ///< Content-Length.
};

/// The response head as the client gets it: its own HTTP version, the upstream's end-to-end
/// fields, the proxy's limit fields (in place of any the upstream sent) and the framing the
/// body is re-sent in.
void write_client_head(const ResponseParser& response, unsigned version, ClientFraming framing,
                       bool keep_alive, bool switching, const pipeline::Decision& decision,
                       config::LimitsHeaders limits_headers, HeadText& head) {
  const std::string_view reason = response.reason();
  write_status_line(
      head, version, response.status(),
      reason.empty() ? std::string_view(http::obsolete_reason(response.result())) : reason);
  const HeadFields& fields = response.head();
  const ConnectionOptions options(fields);
  const bool limits = writes_limit_headers(decision, limits_headers);
  for (std::size_t index = 0; index < fields.size(); ++index) {
    const http::field id = fields.id(index);
    const pipeline::Header& field = fields.at(index);
    if ((id == http::field::transfer_encoding && framing.codings) ||
        !(dropped(id, field.name, options) ||
          (limits && is_limit_field(field.name, limits_headers)))) {
      write_field(head, field.name, field.value);
    }
  }
  write_limit_headers(head, decision, limits_headers);
  if (switching) {
    write_field(head, "Upgrade", fields.value_of(http::field::upgrade));
    append(head, "Connection: upgrade\r\n");
  } else {
    if (framing.chunked && !framing.codings) {
      append(head, "Transfer-Encoding: chunked\r\n");
    } else if (framing.length) {
      write_field(head, "Content-Length", *framing.length);
    }
    write_persistence(head, version, keep_alive);
  }
  end_head(head);
}

/// Whether the client waits for a 100 (Continue) before it sends the body; an HTTP/1.0 client
/// does not know interim responses, and its expectation is ignored (RFC 9110 §10.1.1).
bool expects_continue(const RequestParser& request) {
  return request.version() >= 11 &&
         pipeline::equal_ignoring_case(
             pipeline::trim_whitespace(request.head().value_of(http::field::expect)),
             "100-continue");
}

/// How sending a request upstream ended.
struct UpstreamSend {
  UpstreamFailure failure = UpstreamFailure::none;
  bool client_gone = false;  ///< The client went away before the request was sent whole,
  bool malformed = false;    ///< or sent a body that is not valid (a bad chunk).
};

/// Sends the request (`head`, then the body from `client`) to `upstream` and reads the
/// response's head into `connection->response`: on a parked connection when there is one, else
/// a new one; a request without a body is sent again, once, on a new connection when a parked
/// one turns out closed. Interim responses (100, 102, 103) are skipped. A coroutine of its own
/// to keep the relay's frame small (see UpstreamConnection::response).
io::Awaitable<UpstreamSend> send_upstream(ClientConnection& downstream, const Exchange& exchange,
                                          LoopContext& loop, std::span<char> chunk,
                                          UpstreamConnectionPtr& connection,
                                          std::chrono::steady_clock::time_point& sent_at) {
  io::Stream& client = downstream.stream;
  beast::flat_buffer& client_buffer = downstream.state->buffer;
  RequestParser& parser = exchange.request;
  const config::Upstream& upstream = exchange.upstream();
  const config::Timeouts& timeouts = exchange.config().timeouts;
  const HeadText& head = downstream.state->relay_head;
  // Without a body, a send that fails on a parked connection can be repeated on a new one: the
  // upstream most likely closed it while idle and never saw the request. Only an idempotent
  // request, though: the upstream may also have acted on it and died before answering, and a
  // POST must not be made twice (nginx neither repeats POST, LOCK or PATCH once sent).
  const bool repeatable = parser.is_done() && idempotent(parser.method());
  for (bool first_try = true;; first_try = false) {
    connection.reset();  // a stale parked connection is closed here
    if (first_try) {
      // A request that can be repeated skips the check for a closed parked connection: it is
      // sent again on a new one if that fails.
      connection = loop.pool.take_parked(upstream, /*check_open=*/!repeatable);
    }
    if (!connection) {
      beast::error_code connect_error;
      connection = co_await loop.pool.connect(upstream, exchange.generation.tls->upstream.get(),
                                              exchange.config().upstream_tls, timeouts.connect,
                                              connect_error);
    }
    if (!connection) {
      co_return UpstreamSend{.failure = UpstreamFailure::connect};
    }
    io::Stream& server = connection->stream;
    beast::flat_buffer& server_buffer = connection->buffer;
    const bool may_retry = first_try && connection->reused && repeatable;
    if (first_try && !parser.is_done() && expects_continue(parser)) {
      // The client waits for this before it sends the body.
      static constexpr std::string_view kContinue = "HTTP/1.1 100 Continue\r\n\r\n";
      client.expires_after(timeouts.idle);
      auto [ec, n] = co_await net::async_write(client, net::buffer(kContinue), io::use_nothrow);
      if (ec) {
        co_return UpstreamSend{.client_gone = true};
      }
    }
    sent_at = std::chrono::steady_clock::now();
    bool client_failed = false;
    bool sent_at_once = false;  // then the response's deadline counts from sent_at
    beast::error_code send_error;
    if (WholeMessage whole; whole.gather(parser, client_buffer, head, chunk)) {
      const io::SendStart start = send_now(server, whole.pieces);
      send_error = start.error;
      sent_at_once = start.finished;
      if (!start.finished) {
        send_error = co_await send_rest(server, whole.pieces, start.sent, timeouts.upstream);
      }
    } else {
      const Pumped pumped =
          co_await pump(Source{client, client_buffer, timeouts.idle}, parser,
                        Sink{server, timeouts.upstream}, head, parser.chunked(), chunk);
      send_error = pumped.error;
      client_failed = pumped.read_failed;
    }
    if (send_error) {
      if (client_failed) {  // the client went away mid-body, or its body is malformed
        co_return UpstreamSend{.client_gone = true, .malformed = is_malformed(send_error)};
      }
      if (may_retry) {
        continue;
      }
      co_return UpstreamSend{.failure = failure_of(send_error)};
    }
    // Until the response header arrives.
    beast::error_code header_error;
    std::optional<ResponseParser>& response_parser = connection->response;
    do {
      response_parser.emplace(connection->response_head);
      response_parser->header_limit(kMaxHeaderBytes);
      response_parser->body_limit(boost::none);
      if (parser.method() == http::verb::head) {
        response_parser->skip(true);
      }
      if (sent_at_once) {
        server.expires_at(sent_at + std::chrono::duration_cast<io::Stream::Clock::duration>(
                                        timeouts.upstream));  // one clock reading fewer
        sent_at_once = false;  // an interim response restarts the wait
      } else {
        server.expires_after(timeouts.upstream);
      }
      for (MessageRead read(server_buffer, *response_parser,
                            MessageRead<false>::Until::header_done);
           read.wants_bytes(header_error);) {
        auto [error, n] = co_await server.async_read_some(read.room(), io::use_nothrow);
        read.received(n, error, header_error);
      }
    } while (!header_error && response_parser->status() / 100 == 1 &&
             response_parser->result() != http::status::switching_protocols);
    if (!header_error) {
      co_return UpstreamSend{};
    }
    if (may_retry && server_buffer.size() == 0 && header_error != beast::error::timeout) {
      continue;
    }
    co_return UpstreamSend{.failure = failure_of(header_error)};
  }
}

}  // namespace

std::string_view name_of(UpstreamFailure failure) noexcept {
  switch (failure) {
    case UpstreamFailure::none:
      return "none";
    case UpstreamFailure::connect:
      return "connect";
    case UpstreamFailure::timeout:
      return "timeout";
    case UpstreamFailure::broken:
      return "broken";
  }
  return "unknown";
}

io::Awaitable<RelayOutcome> relay(ClientConnection& downstream, const Exchange& exchange,
                                  LoopContext& loop) {
  io::Stream& client = downstream.stream;
  beast::flat_buffer& client_buffer = downstream.state->buffer;
  RequestParser& parser = exchange.request;
  HeadText& head = downstream.state->relay_head;
  const pipeline::Decision& decision = exchange.decision;
  const config::ProxyConfig& config = exchange.config();
  const config::Timeouts& timeouts = config.timeouts;
  const unsigned version = parser.version();
  const bool upgrade = parser.upgrade() && version >= 11;  // ignored in HTTP/1.0 (RFC 9110 §7.8)
  bool keep_alive = exchange.keep_alive;
  head.clear();
  write_upstream_head(parser, downstream.peer_address_text, client.secure(), upgrade, head);
  const io::ChunkPool::Lease chunk = loop.chunks.borrow();
  UpstreamConnectionPtr connection;
  std::chrono::steady_clock::time_point sent_at;
  const UpstreamSend sent = co_await send_upstream(downstream, exchange, loop,
                                                   std::span<char>(*chunk), connection, sent_at);
  if (sent.client_gone) {
    if (sent.malformed) {  // a bad chunk, found after the head went upstream: still a 400
      co_return co_await answer_and_close(client, http::status::bad_request, UpstreamFailure::none,
                                          version, decision, config);
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
  if (codings && version < 11) {
    failure = UpstreamFailure::broken;
  }
  if (failure != UpstreamFailure::none) {
    co_return co_await fail(client, failure, version, decision, config);
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
    framing.chunked = version >= 11 && (response.chunked() || (unknown_length && !codings));
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
      co_return co_await fail(client, failure_of(pumped.error), version, decision, config);
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
