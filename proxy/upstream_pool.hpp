#pragma once

#include <boost/asio/awaitable.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <chrono>
#include <cstdint>
#include <deque>
#include <optional>
#include <string>
#include <vector>

#include "config/proxy_config.hpp"
#include "limiter/clock.hpp"

namespace sluice::proxy {

/// Idle kept-alive connections to each upstream, for one event loop (so no lock): a request
/// takes the most recently parked one, or opens a new one. At most `max_idle` connections per
/// upstream wait here (as nginx's `keepalive N`); the rest are closed when given back. A parked
/// connection older than `max_age`, or one the upstream has closed or written to, is dropped
/// when it would be taken.
class UpstreamPool {
 public:
  struct Connection {
    boost::beast::tcp_stream stream;
    bool reused = false;  ///< Taken from the pool: a failure before the response may be a stale
                          ///< connection, so an idempotent send can be retried on a new one.
  };

  UpstreamPool(std::size_t max_idle, limiter::Duration max_age)
      : max_idle_(max_idle), max_age_(max_age) {}

  /// An open connection to `upstream`: a parked one if `may_reuse` and one is still good, else
  /// a new one (resolved once, connected within `connect_timeout`). nullopt and `error` when it
  /// cannot connect.
  boost::asio::awaitable<std::optional<Connection>> acquire(const config::Upstream& upstream,
                                                            bool may_reuse,
                                                            limiter::Duration connect_timeout,
                                                            boost::beast::error_code& error);
  /// Parks a connection whose last response was read whole and that stays open.
  void give_back(const config::Upstream& upstream, boost::beast::tcp_stream stream);

  std::size_t idle_connections() const noexcept;

 private:
  struct Parked {
    boost::beast::tcp_stream stream;
    std::chrono::steady_clock::time_point since;
  };
  struct Entry {
    std::string host;
    std::uint16_t port = 0;
    std::optional<boost::asio::ip::tcp::resolver::results_type> endpoints = std::nullopt;
    std::vector<Parked> idle = {};  ///< Most recently parked last.
  };
  Entry& entry_for(const config::Upstream& upstream);

  std::size_t max_idle_;
  limiter::Duration max_age_;
  /// A handful of upstreams: a linear search is fastest. A deque: entries never move.
  std::deque<Entry> entries_;
};

}  // namespace sluice::proxy
