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

/// The tunnel's two connections and its idle timer. Whichever copy or wait ends first ends the
/// others through it: the streams' operations take no cancellation signal, so the tunnel cancels
/// what waits on the sockets (TLS's reads and writes end with them) and the timer.
struct Ends {
  io::Stream& client;
  io::Stream& upstream;
  io::Timer& idle_timer;

  void close() {
    beast::error_code ignored;
    upstream.socket().close(ignored);
    client.socket().cancel(ignored);
    idle_timer.cancel();
  }
};

io::Awaitable<void> copy(io::Stream& from, beast::flat_buffer& early, io::Stream& to,
                         Clock::time_point& last_activity, Ends& ends) {
  if (early.size() > 0) {
    auto [ec, n] = co_await net::async_write(to, early.data(), io::use_nothrow);
    if (ec) {
      ends.close();
      co_return;
    }
    early.consume(n);
  }
  std::array<char, 16 * 1024> chunk;
  for (;;) {
    auto [read_error, n] = co_await from.async_read_some(net::buffer(chunk), io::use_nothrow);
    if (read_error) {
      break;  // closed, reset or cancelled: the tunnel is over
    }
    last_activity = Clock::now();
    auto [write_error, written] =
        co_await net::async_write(to, net::buffer(chunk.data(), n), io::use_nothrow);
    if (write_error) {
      break;
    }
  }
  ends.close();
}

/// Returns once nothing has moved for `idle`, or the tunnel is over.
io::Awaitable<void> watchdog(const Clock::time_point& last_activity, limiter::Duration idle,
                             Ends& ends) {
  for (;;) {
    const auto deadline = last_activity + idle;
    if (Clock::now() >= deadline) {
      break;
    }
    ends.idle_timer.expires_at(deadline);
    auto [ec] = co_await ends.idle_timer.async_wait(io::use_nothrow);
    if (ec) {
      co_return;  // the tunnel is over
    }
  }
  ends.close();
}

}  // namespace

io::Awaitable<void> tunnel(io::Stream& client, beast::flat_buffer& client_early,
                           io::Stream& upstream, beast::flat_buffer& upstream_early,
                           limiter::Duration idle) {
  Clock::time_point last_activity = Clock::now();
  io::Timer idle_timer(co_await net::this_coro::executor);
  Ends ends{client, upstream, idle_timer};
  client.expires_never();
  upstream.expires_never();
  co_await (copy(client, client_early, upstream, last_activity, ends) &&
            copy(upstream, upstream_early, client, last_activity, ends) &&
            watchdog(last_activity, idle, ends));
  beast::error_code ignored;
  client.socket().shutdown(io::Socket::shutdown_both, ignored);
}

}  // namespace sluice::http
