#include "proxy/http/tunnel.hpp"

#include <array>
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/write.hpp>
#include <chrono>

#include "proxy/io/net.hpp"

namespace sluice::http {
namespace {

using namespace net::experimental::awaitable_operators;
using Clock = std::chrono::steady_clock;

io::Awaitable<void> copy(io::Socket& from, beast::flat_buffer& early, io::Socket& to,
                         Clock::time_point& last_activity) {
  if (early.size() > 0) {
    auto [ec, n] = co_await net::async_write(to, early.data(), io::use_nothrow);
    if (ec) {
      co_return;
    }
    early.consume(n);
  }
  std::array<char, 16 * 1024> chunk;
  for (;;) {
    auto [read_error, n] = co_await from.async_read_some(net::buffer(chunk), io::use_nothrow);
    if (read_error) {
      co_return;  // closed, reset or cancelled: the tunnel is over
    }
    last_activity = Clock::now();
    auto [write_error, written] =
        co_await net::async_write(to, net::buffer(chunk.data(), n), io::use_nothrow);
    if (write_error) {
      co_return;
    }
  }
}

/// Returns once nothing has moved for `idle`.
io::Awaitable<void> watchdog(const Clock::time_point& last_activity, limiter::Duration idle) {
  io::Timer timer(co_await net::this_coro::executor);
  for (;;) {
    const auto deadline = last_activity + idle;
    if (Clock::now() >= deadline) {
      co_return;
    }
    timer.expires_at(deadline);
    auto [ec] = co_await timer.async_wait(io::use_nothrow);
    if (ec) {
      co_return;
    }
  }
}

}  // namespace

io::Awaitable<void> tunnel(io::Socket& client, beast::flat_buffer& client_early,
                           io::Socket& upstream, beast::flat_buffer& upstream_early,
                           limiter::Duration idle) {
  Clock::time_point last_activity = Clock::now();
  // The first to finish cancels the others.
  co_await (copy(client, client_early, upstream, last_activity) ||
            copy(upstream, upstream_early, client, last_activity) || watchdog(last_activity, idle));
  beast::error_code ignored;
  upstream.close(ignored);
  client.shutdown(io::Socket::shutdown_both, ignored);
}

}  // namespace sluice::http
