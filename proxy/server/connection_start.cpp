// How a client connection starts, before any request: its TLS handshake (or the 400 for plain
// HTTP sent to a TLS port), and which protocol it speaks, HTTP/2 by ALPN or by its connection
// preface, else HTTP/1.1; then it is handed to that protocol's server (as Beast's
// detect_session hands a connection on).
#include "proxy/server/connection_start.hpp"

#include <sys/socket.h>

#include <array>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <memory>
#include <string_view>
#include <utility>

#include "proxy/http/h2/connection.hpp"
#include "proxy/http/http1_connection.hpp"
#include "proxy/io/socket_io.hpp"
#include "proxy/tls/contexts.hpp"
#include "proxy/tls/peer.hpp"

namespace sluice::server {
namespace {

using http::ClientConnection;
using http::LoopContext;
using http::OpenConnection;
using http::OpenPtr;
namespace h2 = http::h2;

/// What a new cleartext connection sent first: HTTP/2's connection preface (RFC 9113 §3.4,
/// prior knowledge), something else (an HTTP/1.1 request line), or nothing yet. One
/// non-blocking peek.
enum class FirstBytes { preface, other, none_yet };

FirstBytes peek_first_bytes(io::Socket& socket) {
  static constexpr std::string_view kPreface = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
  std::array<char, kPreface.size()> first{};
  const ssize_t n =
      ::recv(socket.native_handle(), first.data(), first.size(), MSG_PEEK | MSG_DONTWAIT);
  if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
    return FirstBytes::none_yet;
  }
  // "PRI " is no HTTP/1.1 method in use; a preface split before it is too rare to wait for.
  return n >= 4 && kPreface.starts_with(std::string_view(first.data(), static_cast<std::size_t>(n)))
             ? FirstBytes::preface
             : FirstBytes::other;
}

/// A new cleartext connection, when HTTP/2 is on: HTTP/2 when it starts with the connection
/// preface, else HTTP/1.1. Its first bytes are awaited if they are not in yet (the wait for a
/// new connection's first request returns at once, trusting its read to wait).
void serve_either_protocol(OpenPtr open, LoopContext& loop) {
  ClientConnection& client = open->client;
  const io::Executor executor = client.stream.get_executor();
  switch (peek_first_bytes(client.stream.socket())) {
    case FirstBytes::preface:
      net::co_spawn(executor, h2::serve_http2(std::move(open), loop), net::detached);
      return;
    case FirstBytes::other:
      net::co_spawn(executor, serve_http1(std::move(open), loop), net::detached);
      return;
    case FirstBytes::none_yet:
      // Asio's own wait; the deadline, which closes the socket, ends it too.
      client.stream.socket().async_wait(
          io::Socket::wait_read, [open = std::move(open), &loop](beast::error_code ec) mutable {
            if (!ec) {
              serve_either_protocol(std::move(open), loop);
            }
          });
      return;
  }
}

/// A new cleartext connection: waits, with no buffer and no coroutine frame, for its first
/// bytes (within timeouts.header, which goes on for its first request), then serves it as the
/// protocol they say.
void wait_for_first_bytes(OpenPtr open, LoopContext& loop) {
  if (loop.proxy.draining.load(std::memory_order_relaxed)) {
    return;  // closes it
  }
  ClientConnection& client = open->client;
  client.stream.expires_after(open->generation->config->timeouts.header);
  client.waiting = true;  // nothing in flight: a drain may close it
  client.stream.async_wait_readable([open = std::move(open), &loop](beast::error_code ec) mutable {
    if (ec) {
      return;  // closes it
    }
    if (open->generation->config->http2.enabled) {
      serve_either_protocol(std::move(open), loop);
      return;
    }
    const io::Executor executor = open->client.stream.get_executor();
    net::co_spawn(executor, serve_http1(std::move(open), loop), net::detached);
  });
}

/// Whether a new connection to a TLS port starts with plain HTTP (a request line's method)
/// rather than a TLS record. One non-blocking peek, once the first bytes are there.
bool speaks_plain_http(io::Socket& socket) {
  char first = 0;
  const ssize_t n = ::recv(socket.native_handle(), &first, 1, MSG_PEEK | MSG_DONTWAIT);
  return n == 1 && first >= 'A' && first <= 'Z';
}

/// Tells a client that sent plain HTTP to a TLS port what it did wrong, as nginx does, in the
/// only language it understands, then closes. What it sent is read first (up to 4 KiB), so that
/// the close does not reset the connection under the answer.
io::Awaitable<void> refuse_plain_http(io::Stream& stream, limiter::Duration timeout) {
  static constexpr std::string_view kAnswer =
      "HTTP/1.1 400 Bad Request\r\nContent-Type: text/plain\r\nContent-Length: 50\r\n"
      "Connection: close\r\n\r\nThis port speaks HTTPS: send the request with TLS\n";
  std::array<char, 4096> ignored{};
  ::recv(stream.socket().native_handle(), ignored.data(), ignored.size(), MSG_DONTWAIT);
  const std::array<net::const_buffer, 1> answer{net::buffer(kAnswer)};
  co_await send(stream, answer, timeout);
}

/// A connection to a TLS listener: its handshake, within the header timeout (which goes on
/// for its first request), then its requests. A failed handshake closes only this connection;
/// plain HTTP gets a 400 that says why.
io::Awaitable<void> handshake_then_serve(OpenPtr open, LoopContext& loop,
                                         std::shared_ptr<tls::Context> context) {
  ClientConnection& client = open->client;
  const limiter::Duration header_timeout = open->generation->config->timeouts.header;
  client.stream.expires_after(header_timeout);
  client.waiting = true;  // nothing in flight: a drain may close it
  using Handshake = telemetry::Metrics::Handshake;
  // Asio's own wait (the drain-aware one would not wait on a new socket); the deadline, which
  // closes the socket, ends it too.
  auto [waited] =
      co_await client.stream.socket().async_wait(io::Socket::wait_read, io::use_nothrow);
  if (!waited && speaks_plain_http(client.stream.socket())) {
    loop.proxy.metrics.count_tls_handshake(Handshake::failed);
    co_await refuse_plain_http(client.stream, header_timeout);
    co_return;
  }
  client.stream.start_tls(*context);
  auto [ec] =
      co_await client.stream.async_handshake(net::ssl::stream_base::server, io::use_nothrow);
  if (ec) {
    loop.proxy.metrics.count_tls_handshake(Handshake::failed);
    co_return;
  }
  loop.proxy.metrics.count_tls_handshake(
      SSL_session_reused(client.stream.tls_handle()) == 1 ? Handshake::resumed : Handshake::full);
  if (SSL_CTX_get_verify_mode(context->native_handle()) != SSL_VERIFY_NONE) {
    if (auto certificate = tls::client_certificate(client.stream.tls_handle())) {
      client.certificate =
          std::make_unique<const pipeline::ClientCertificate>(std::move(*certificate));
    }
  }
  if (tls::alpn_chose_h2(client.stream.tls_handle())) {
    co_await h2::serve_http2(std::move(open), loop);
    co_return;
  }
  // Straight to reading: the first request may have come with the handshake's last bytes,
  // already out of the socket.
  co_await serve_http1(std::move(open), loop);
}

}  // namespace

void serve_client(io::Socket socket, LoopContext& loop, std::size_t listener) {
  OpenPtr open(new OpenConnection(std::move(socket), loop));  // NOLINT: CloseConnection frees it
  open->client.decides = listener == loop.decide_listener;
  if (!loop.tls_listeners[listener]) {
    wait_for_first_bytes(std::move(open), loop);
    return;
  }
  const std::vector<std::shared_ptr<tls::Context>>& contexts = open->generation->tls->listeners;
  if (listener >= contexts.size() || !contexts[listener]) {
    return;  // reloaded without TLS on this listener: it serves TLS only, until a restart
  }
  const io::Executor executor = open->client.stream.get_executor();
  std::shared_ptr<tls::Context> context = contexts[listener];
  net::co_spawn(executor, handshake_then_serve(std::move(open), loop, std::move(context)),
                net::detached);
}

}  // namespace sluice::server
