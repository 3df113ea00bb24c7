#pragma once

#include <utility>

#include "proxy/io/net.hpp"
#if SLUICE_DRAIN_AWARE_READ
#include "proxy/io/drain_aware_read.hpp"
#endif

namespace sluice::io {

/// The one place where a Stream's reads reach its socket, in one of two ways chosen when
/// building (CMake option SLUICE_DRAIN_AWARE_READ):
/// - Asio's public async_read_some: each read first tries a recv at once, which on a keep-alive
///   connection usually finds nothing yet (EAGAIN), then waits for epoll. The fallback, used
///   with any Asio.
/// - the drain-aware read (drain_aware_read.hpp): after a read that emptied the socket, the
///   next one waits for epoll without that recv, one system call fewer per read. It is built on
///   Asio 1.26's epoll reactor internals, so CMake turns it on (AUTO) only with Boost 1.81.
class SocketReader {
 public:
  explicit SocketReader([[maybe_unused]] const Executor& executor)
#if SLUICE_DRAIN_AWARE_READ
      : reactor_(&reactor_of(executor))  // looked up once per socket: it takes a lock
#endif
  {
  }

  template <class MutableBuffers, class Handler>
  void async_read_some(Socket& socket, const MutableBuffers& buffers, Handler&& handler) {
#if SLUICE_DRAIN_AWARE_READ
    async_read_some_drain_aware(socket, *reactor_, buffers, std::forward<Handler>(handler));
#else
    socket.async_read_some(buffers, std::forward<Handler>(handler));
#endif
  }

  /// Waits until the socket may have bytes to read, reading none. The drain-aware wait starts
  /// without a system call when the last read emptied the socket; Asio's public one re-arms the
  /// descriptor with epoll_ctl each time.
  template <class Handler>
  void async_wait_readable(Socket& socket, Handler&& handler) {
#if SLUICE_DRAIN_AWARE_READ
    async_wait_readable_drain_aware(socket, *reactor_, std::forward<Handler>(handler));
#else
    socket.async_wait(Socket::wait_read, std::forward<Handler>(handler));
#endif
  }

  /// The same wait, right after a recv on the socket found nothing (EAGAIN): the drain-aware
  /// wait then starts with no system call at all (Asio's re-arms with epoll_ctl).
  template <class Handler>
  void async_wait_readable_after_empty_recv(Socket& socket, Handler&& handler) {
#if SLUICE_DRAIN_AWARE_READ
    async_wait_readable_drain_aware(socket, *reactor_, std::forward<Handler>(handler), true);
#else
    socket.async_wait(Socket::wait_read, std::forward<Handler>(handler));
#endif
  }

 private:
#if SLUICE_DRAIN_AWARE_READ
  Reactor* reactor_;
#endif
};

}  // namespace sluice::io
