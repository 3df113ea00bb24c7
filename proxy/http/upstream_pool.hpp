#pragma once

#include <boost/asio/awaitable.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <chrono>
#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "config/proxy_config.hpp"
#include "limiter/clock.hpp"
#include "proxy/http/message_parser.hpp"
#include "proxy/io/net.hpp"
#include "proxy/io/stream.hpp"

namespace sluice::http {

/// Idle kept-alive connections to each upstream, for one event loop (so no lock): a request
/// takes the most recently parked one, or opens a new one. At most `max_idle` connections per
/// upstream wait here (as nginx's `keepalive N`); the rest are closed when given back. A parked
/// connection older than `max_age`, or one the upstream has closed or written to, is dropped
/// when it would be taken.
/// A connection to an upstream with its read buffer. It lives on the heap and moves by pointer:
/// A stream does not move.
struct UpstreamConnection {
  explicit UpstreamConnection(const io::Executor& executor) : stream(executor) {}
  io::Stream stream;
  boost::beast::flat_buffer buffer;  ///< Kept with the connection, capacity and all.
  /// The response being read. Here rather than in the relay's coroutine frame: Asio reuses
  /// freed frames of up to about 1 KiB, and a larger one costs a malloc and a free per request.
  std::optional<ResponseParser> response;
  HeadFields response_head;  ///< What `response` parses the head into; kept, capacity and all.
  std::chrono::steady_clock::time_point parked_at{};  ///< On io::CoarseClock
  bool reused = false;  ///< Taken from the pool: a failure before the response may be a stale
                        ///< connection, so an idempotent send can be retried on a new one.
};
using UpstreamConnectionPtr = std::unique_ptr<UpstreamConnection>;

class UpstreamPool {
 public:
  UpstreamPool(std::size_t max_idle, limiter::Duration max_age)
      : max_idle_(max_idle), max_age_(max_age) {}

  /// The most recently parked connection to `upstream` that is young enough and, if
  /// `check_open`, still open (one non-blocking peek), or null.
  UpstreamConnectionPtr take_parked(const config::Upstream& upstream, bool check_open);
  /// A new connection to `upstream` (resolved once, connected within `connect_timeout`, which
  /// includes the TLS handshake of an https:// one, with `tls_context` and `tls` settings). Null
  /// and `error` when it cannot connect; a TLS handshake that fails is logged with its reason.
  io::Awaitable<UpstreamConnectionPtr> connect(const config::Upstream& upstream,
                                               boost::asio::ssl::context* tls_context,
                                               const config::UpstreamTls& tls,
                                               limiter::Duration connect_timeout,
                                               boost::beast::error_code& error);
  /// Parks a connection whose last response was read whole and that stays open.
  void give_back(const config::Upstream& upstream, UpstreamConnectionPtr connection);

  std::size_t idle_connections() const noexcept;

 private:
  struct Entry {
    std::string host;
    std::uint16_t port = 0;
    bool tls = false;
    bool http2 = false;
    std::optional<boost::asio::ip::tcp::resolver::results_type> endpoints = std::nullopt;
    std::vector<UpstreamConnectionPtr> idle = {};  ///< Most recently parked last.
  };
  Entry& entry_for(const config::Upstream& upstream);

  std::size_t max_idle_;
  limiter::Duration max_age_;
  /// A handful of upstreams: a linear search is fastest. A deque: entries never move.
  std::deque<Entry> entries_;
};

}  // namespace sluice::http
