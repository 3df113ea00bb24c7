#pragma once

#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstddef>
#include <span>

#include "proxy/io/net.hpp"

namespace sluice::io {

// The request path's reads and writes, made through syscall(2) rather than libc's recv and
// sendmsg. Those are thread-cancellation points, and their cancellation bookkeeping cost about
// 1.5 % of a forwarded request's CPU; no thread here is ever cancelled. Errors come back as
// Asio's (would_block for EAGAIN), and a call interrupted by a signal is made again.

/// Receives up to `size` bytes from `fd` without waiting. Returns the bytes read; 0 with
/// net::error::eof at end of stream.
inline std::size_t receive_some(int fd, void* data, std::size_t size, beast::error_code& error) {
  for (;;) {
    const long received = ::syscall(SYS_recvfrom, fd, data, size, 0, nullptr, nullptr);
    if (received > 0) {
      error = {};
      return static_cast<std::size_t>(received);
    }
    if (received == 0) {
      error = size == 0 ? beast::error_code{} : beast::error_code(net::error::eof);
      return 0;
    }
    if (errno != EINTR) {
      error = beast::error_code(errno, net::error::get_system_category());
      return 0;
    }
  }
}

/// Sends what `fd` takes of `buffers` without waiting (at most 16 of them per call; the caller
/// sends the rest). Never raises SIGPIPE. Returns the bytes sent.
inline std::size_t send_some(int fd, std::span<const net::const_buffer> buffers,
                             beast::error_code& error) {
  std::array<iovec, 16> pieces;
  const std::size_t count = std::min(buffers.size(), pieces.size());
  for (std::size_t i = 0; i < count; ++i) {
    pieces[i].iov_base = const_cast<void*>(buffers[i].data());  // sendmsg only reads them
    pieces[i].iov_len = buffers[i].size();
  }
  msghdr message{};
  message.msg_iov = pieces.data();
  message.msg_iovlen = count;
  for (;;) {
    const long sent = ::syscall(SYS_sendmsg, fd, &message, MSG_NOSIGNAL);
    if (sent >= 0) {
      error = {};
      return static_cast<std::size_t>(sent);
    }
    if (errno != EINTR) {
      error = beast::error_code(errno, net::error::get_system_category());
      return 0;
    }
  }
}

}  // namespace sluice::io
