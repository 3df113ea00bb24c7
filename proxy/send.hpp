#pragma once

#include <boost/asio/awaitable.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/buffers_suffix.hpp>
#include <boost/beast/core/tcp_stream.hpp>

#include "limiter/clock.hpp"
#include "proxy/net.hpp"

namespace sluice::proxy {

/// Sends `buffers` on `stream`, whose socket is in non-blocking mode: first with one
/// non-blocking write, which takes a whole response or request head in the usual case without
/// arming a timer or going through the event loop; only what the socket did not take is then
/// written asynchronously, within `timeout`.
template <class Buffers>
net::awaitable<beast::error_code> send(beast::tcp_stream& stream, const Buffers& buffers,
                                       limiter::Duration timeout) {
  beast::error_code error;
  const std::size_t total = net::buffer_size(buffers);
  // A socket in blocking mode would block the event loop here: it only gets the slow path.
  const std::size_t sent =
      stream.socket().non_blocking() ? stream.socket().write_some(buffers, error) : 0;
  if (error == net::error::would_block || error == net::error::try_again) {
    error = {};
  } else if (error) {
    co_return error;
  }
  if (sent == total) {
    co_return beast::error_code{};
  }
  beast::buffers_suffix<Buffers> rest(buffers);
  rest.consume(sent);
  stream.expires_after(timeout);
  auto [write_error, written] = co_await net::async_write(stream, rest, use_nothrow);
  co_return write_error;
}

}  // namespace sluice::proxy
