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

/// How far a write that does not wait got.
struct SendStart {
  beast::error_code error;
  std::size_t sent = 0;   ///< Bytes the socket took.
  bool finished = false;  ///< All sent, or failed: nothing left to wait for.
};

/// Writes what `stream`'s socket takes of `buffers` at once, without suspending: on the request
/// path this is usually all of it, and then no coroutine frame is allocated for a wait
/// (send_rest is only called, and its frame only made, when something is left).
template <class Buffers>
SendStart send_now(Stream& stream, const Buffers& buffers) {
  SendStart start;
  // A socket in blocking mode would block the event loop here: it only gets the slow path.
  if (stream.socket().non_blocking()) {
    start.sent = stream.socket().write_some(buffers, start.error);
  }
  if (would_block(start.error)) {
    start.error = {};
  }
  start.finished = start.error || start.sent == net::buffer_size(buffers);
  return start;
}

/// Sends what send_now left of `buffers` (all but the first `sent` bytes), within `timeout`.
template <class Buffers>
Awaitable<beast::error_code> send_rest(Stream& stream, const Buffers& buffers, std::size_t sent,
                                       limiter::Duration timeout) {
  beast::buffers_suffix<Buffers> rest(buffers);
  rest.consume(sent);
  stream.expires_after(timeout);
  auto [error, written] = co_await net::async_write(stream, rest, use_nothrow);
  co_return error;
}

/// Sends `buffers` on `stream`: what the socket takes at once, then the rest within `timeout`.
/// For paths off the hot one; those use send_now and send_rest themselves.
template <class Buffers>
Awaitable<beast::error_code> send(Stream& stream, const Buffers& buffers,
                                  limiter::Duration timeout) {
  const SendStart start = send_now(stream, buffers);
  if (start.finished) {
    co_return start.error;
  }
  co_return co_await send_rest(stream, buffers, start.sent, timeout);
}

}  // namespace sluice::proxy
