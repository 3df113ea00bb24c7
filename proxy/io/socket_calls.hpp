#pragma once

#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstddef>
#include <cstring>
#include <span>

#include "proxy/io/net.hpp"

namespace sluice::io {

// The request path's reads and writes, made through syscall(2) rather than libc's recv and
// sendmsg. Those are thread-cancellation points, and their cancellation bookkeeping cost about
// 1.5 % of a forwarded request's CPU; no thread here is ever cancelled. Errors come back as
// Asio's (would_block for EAGAIN), and a call interrupted by a signal is made again.

/// Linux's TCP_INQ (4.18): each receive on the socket then tells how much is left to read after
/// it, a pending end of stream counted as 1. Set on a listening socket, accepted ones inherit it.
inline constexpr int kTcpInq = 36;  // TCP_INQ, and its control message type TCP_CM_INQ

/// Asks for the TCP_INQ hint on `fd` (see receive_some); harmless where there is none.
inline void ask_for_rest_hint(int fd) noexcept {
  const int on = 1;
  ::setsockopt(fd, IPPROTO_TCP, kTcpInq, &on, sizeof on);
}

/// Receives up to `size` bytes from `fd` without waiting. Returns the bytes read; 0 with
/// net::error::eof at end of stream. `more` says whether the socket holds more after this
/// read: bytes, or an end of stream not read yet, which raises no epoll event of its own once
/// the bytes before it are read. From the TCP_INQ hint; true when the socket gives none
/// (nothing is known).
inline std::size_t receive_some(int fd, void* data, std::size_t size, beast::error_code& error,
                                bool& more) {
  iovec piece{data, size};
  alignas(cmsghdr) std::array<char, CMSG_SPACE(sizeof(int))> control;
  for (;;) {
    msghdr message{};
    message.msg_iov = &piece;
    message.msg_iovlen = 1;
    message.msg_control = control.data();
    message.msg_controllen = control.size();
    const long received = ::syscall(SYS_recvmsg, fd, &message, 0);
    if (received < 0 && errno == EINTR) {
      continue;
    }
    more = true;
    if (received < 0) {
      error = beast::error_code(errno, net::error::get_system_category());
      return 0;
    }
    const cmsghdr* hint = CMSG_FIRSTHDR(&message);
    if (hint != nullptr && hint->cmsg_level == IPPROTO_TCP && hint->cmsg_type == kTcpInq) {
      int rest = 0;
      std::memcpy(&rest, CMSG_DATA(hint), sizeof rest);
      more = rest > 0;
    }
    error = received == 0 && size > 0 ? beast::error_code(net::error::eof) : beast::error_code{};
    return static_cast<std::size_t>(received);
  }
}

/// Whether a read on `fd` would not wait: a byte is there, or an end of stream, or an error
/// (a peek, which leaves them for the read).
inline bool has_bytes_or_end(int fd) noexcept {
  char byte = 0;
  for (;;) {
    const long peeked =
        ::syscall(SYS_recvfrom, fd, &byte, 1, MSG_PEEK | MSG_DONTWAIT, nullptr, nullptr);
    if (peeked < 0 && errno == EINTR) {
      continue;
    }
    return peeked >= 0 || (errno != EAGAIN && errno != EWOULDBLOCK);
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
