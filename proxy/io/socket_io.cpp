#include "proxy/io/socket_io.hpp"

#include <boost/asio/write.hpp>
#include <boost/beast/core/buffers_suffix.hpp>

#include "proxy/io/socket_calls.hpp"

namespace sluice::io {

SendStart send_now(Stream& stream, SendBuffers buffers) {
  SendStart start;
  // A socket in blocking mode would block the event loop here: it only gets the slow path, as
  // does a TLS connection, whose bytes are encrypted on the way.
  if (stream.socket().non_blocking() && !stream.secure()) {
    start.sent = send_some(stream.socket().native_handle(), buffers, start.error);
  }
  if (would_block(start.error)) {
    start.error = {};
  }
  start.finished = start.error || start.sent == net::buffer_size(buffers);
  return start;
}

Awaitable<beast::error_code> send_rest(Stream& stream, SendBuffers buffers, std::size_t sent,
                                       Duration timeout) {
  beast::buffers_suffix<SendBuffers> rest(buffers);
  rest.consume(sent);
  stream.expires_after(timeout);
  auto [error, written] = co_await net::async_write(stream, rest, use_nothrow);
  co_return error;
}

Awaitable<beast::error_code> send(Stream& stream, SendBuffers buffers, Duration timeout) {
  const SendStart start = send_now(stream, buffers);
  if (start.finished) {
    co_return start.error;
  }
  co_return co_await send_rest(stream, buffers, start.sent, timeout);
}

}  // namespace sluice::io
