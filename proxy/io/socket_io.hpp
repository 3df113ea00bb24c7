#pragma once

#include <boost/asio/awaitable.hpp>
#include <cstddef>
#include <span>

#include "proxy/io/net.hpp"
#include "proxy/io/stream.hpp"

namespace sluice::io {

// Writes on the request path first try once without waiting: the socket usually has room for
// a whole head or response, and then no timer is armed and nothing goes through the event loop.
// Only what cannot be written at once is waited for, with its deadline. The sockets are put in
// non-blocking mode when they open; one in blocking mode only gets the waiting path.
// (Reads are not tried this way: once a read has emptied the socket, the next one waits for
// epoll; see drain_aware_read.hpp.)

inline bool would_block(const beast::error_code& error) noexcept {
  return error == net::error::would_block || error == net::error::try_again;
}

/// A buffer sequence to send. (One type for every caller: the coroutines below are compiled
/// once, in socket_io.cpp.)
using SendBuffers = std::span<const net::const_buffer>;

/// How far a write that does not wait got.
struct SendStart {
  beast::error_code error;
  std::size_t sent = 0;   ///< Bytes the socket took.
  bool finished = false;  ///< All sent, or failed: nothing left to wait for.
};

/// Writes what `stream`'s socket takes of `buffers` at once, without suspending: on the request
/// path this is usually all of it, and then no coroutine frame is allocated for a wait
/// (send_rest is only called, and its frame only made, when something is left).
SendStart send_now(Stream& stream, SendBuffers buffers);

/// Sends what send_now left of `buffers` (all but the first `sent` bytes), within `timeout`.
Awaitable<beast::error_code> send_rest(Stream& stream, SendBuffers buffers, std::size_t sent,
                                       Duration timeout);

/// Sends `buffers` on `stream`: what the socket takes at once, then the rest within `timeout`.
/// For paths off the hot one; those use send_now and send_rest themselves.
Awaitable<beast::error_code> send(Stream& stream, SendBuffers buffers, Duration timeout);

}  // namespace sluice::io
