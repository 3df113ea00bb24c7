#include "proxy/http/upstream_pool.hpp"

#include <spdlog/spdlog.h>
#include <sys/socket.h>

#include <boost/asio/connect.hpp>

#include "config/url.hpp"
#include "proxy/io/coarse_clock.hpp"
#include "proxy/io/net.hpp"
#include "proxy/io/socket_calls.hpp"
#include "proxy/tls/contexts.hpp"
#include "proxy/tls/peer.hpp"

namespace sluice::http {
namespace {

/// Whether a parked connection is still usable: nothing to read yet (a closed connection reads
/// end of stream; an unasked-for byte means the upstream is confused). One non-blocking peek.
bool still_open(io::Socket& socket) {
  char byte = 0;
  const ssize_t n = ::recv(socket.native_handle(), &byte, 1, MSG_PEEK | MSG_DONTWAIT);
  return n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK);
}

}  // namespace

UpstreamPool::Entry& UpstreamPool::entry_for(const config::Upstream& upstream) {
  for (Entry& entry : entries_) {
    if (entry.port == upstream.port && entry.tls == upstream.tls && entry.http2 == upstream.http2 &&
        entry.host == upstream.host) {
      return entry;
    }
  }
  return entries_.emplace_back(Entry{
      .host = upstream.host, .port = upstream.port, .tls = upstream.tls, .http2 = upstream.http2});
}

UpstreamConnectionPtr UpstreamPool::take_parked(const config::Upstream& upstream, bool check_open) {
  Entry& entry = entry_for(upstream);
  const auto now = io::CoarseClock::now();
  while (!entry.idle.empty()) {
    UpstreamConnectionPtr parked = std::move(entry.idle.back());
    entry.idle.pop_back();
    if (now - parked->parked_at < max_age_ &&
        (!check_open || still_open(parked->stream.socket()))) {
      parked->reused = true;
      return parked;
    }
    beast::error_code ignored;
    parked->stream.socket().close(ignored);
  }
  return nullptr;
}

io::Awaitable<UpstreamConnectionPtr> UpstreamPool::connect(const config::Upstream& upstream,
                                                           net::ssl::context* tls_context,
                                                           const config::UpstreamTls& tls,
                                                           limiter::Duration connect_timeout,
                                                           beast::error_code& error) {
  Entry& entry = entry_for(upstream);
  const auto executor = co_await net::this_coro::executor;
  if (!entry.endpoints) {
    io::Resolver resolver(executor);
    auto [resolve_error, endpoints] = co_await resolver.async_resolve(
        upstream.host, std::to_string(upstream.port), io::use_nothrow);
    if (resolve_error) {
      error = resolve_error;
      co_return nullptr;
    }
    entry.endpoints = std::move(endpoints);
  }
  const tcp::resolver::results_type endpoints = *entry.endpoints;
  auto connection = std::make_unique<UpstreamConnection>(executor);
  connection->stream.expires_after(connect_timeout);
  auto [connect_error, endpoint] =
      co_await net::async_connect(connection->stream.socket(), endpoints, io::use_nothrow);
  if (connect_error == net::error::operation_aborted && connection->stream.timed_out()) {
    connect_error = beast::error::timeout;
  }
  if (connect_error) {
    error = connect_error;
    entry.endpoints.reset();  // resolve again next time: the address may have changed
    co_return nullptr;
  }
  connection->stream.socket().set_option(tcp::no_delay(true), error);
  io::ask_for_rest_hint(connection->stream.socket().native_handle());  // see socket_calls.hpp
  connection->stream.socket().non_blocking(true, error);               // see socket_io.hpp
  error = {};
  if (upstream.tls && tls_context != nullptr) {
    io::Stream& stream = connection->stream;
    stream.start_tls(*tls_context);
    if (tls.verify) {
      tls::expect_server(stream.tls_handle(),
                         tls.server_name.empty() ? upstream.host : tls.server_name);
    }
    if (upstream.http2) {  // h2://: ALPN h2 only, in place of the context's http/1.1
      static constexpr unsigned char kH2[] = "\x02h2";
      SSL_set_alpn_protos(stream.tls_handle(), kH2, sizeof kH2 - 1);
    }
    auto [handshake_error] =
        co_await stream.async_handshake(net::ssl::stream_base::client, io::use_nothrow);
    if (handshake_error) {
      spdlog::warn("upstream {}: TLS handshake failed: {}", config::redact_url(upstream.url),
                   tls::handshake_failure(stream.tls_handle(), handshake_error));
      error = handshake_error;
      co_return nullptr;
    }
    if (upstream.http2 && !tls::alpn_chose_h2(stream.tls_handle())) {
      spdlog::warn("upstream {}: the server did not agree to HTTP/2 (ALPN h2)",
                   config::redact_url(upstream.url));
      error = net::error::no_protocol_option;
      co_return nullptr;
    }
  }
  co_return connection;
}

void UpstreamPool::give_back(const config::Upstream& upstream, UpstreamConnectionPtr connection) {
  Entry& entry = entry_for(upstream);
  if (entry.idle.size() >= max_idle_) {
    beast::error_code ignored;
    connection->stream.socket().close(ignored);
    return;
  }
  connection->parked_at = io::CoarseClock::now();
  connection->buffer.clear();
  entry.idle.push_back(std::move(connection));
}

std::size_t UpstreamPool::idle_connections() const noexcept {
  std::size_t total = 0;
  for (const Entry& entry : entries_) {
    total += entry.idle.size();
  }
  return total;
}

}  // namespace sluice::http
