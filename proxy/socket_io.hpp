#pragma once

#include <boost/asio/awaitable.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/buffers_suffix.hpp>

#include "limiter/clock.hpp"
#include "proxy/net.hpp"
#include "proxy/stream.hpp"

namespace sluice::proxy {

// Writes on the request path first try once without waiting: the socket usually has room for
// a whole head or response, and then no timer is armed and nothing goes through the event loop.
// Only what cannot be written at once is waited for, with its deadline. The sockets are put in
// non-blocking mode when they open; one in blocking mode only gets the waiting path.
// (Reads are not done this way: a read that finds nothing costs a system call more, and the
// benchmark came out worse.)

inline bool would_block(const beast::error_code& error) noexcept {
  return error == net::error::would_block || error == net::error::try_again;
}

/// Sends `buffers` on `stream`: one write that does not wait, then what the socket did not take
/// within `timeout`.
template <class Buffers>
Awaitable<beast::error_code> send(Stream& stream, const Buffers& buffers,
                                  limiter::Duration timeout) {
  beast::error_code error;
  const std::size_t total = net::buffer_size(buffers);
  // A socket in blocking mode would block the event loop here: it only gets the slow path.
  const std::size_t sent =
      stream.socket().non_blocking() ? stream.socket().write_some(buffers, error) : 0;
  if (would_block(error)) {
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
