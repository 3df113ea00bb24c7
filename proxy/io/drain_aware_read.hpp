#pragma once

#include <boost/asio/detail/bind_handler.hpp>
#include <boost/asio/detail/buffer_sequence_adapter.hpp>
#include <boost/asio/detail/fenced_block.hpp>
#include <boost/asio/detail/handler_alloc_helpers.hpp>
#include <boost/asio/detail/handler_cont_helpers.hpp>
#include <boost/asio/detail/handler_work.hpp>
#include <boost/asio/detail/memory.hpp>
#include <boost/asio/detail/reactor.hpp>
#include <boost/asio/detail/reactor_op.hpp>
#include <boost/asio/detail/socket_ops.hpp>
#include <boost/asio/execution/context.hpp>
#include <boost/asio/query.hpp>
#include <boost/asio/version.hpp>
#include <cstddef>
#include <utility>

#include "proxy/io/net.hpp"
#include "proxy/io/socket_calls.hpp"

// A read that tells the event loop when it emptied the socket, so that the next read on a
// keep-alive connection waits for epoll instead of first trying a recv that finds nothing.
//
// Why: Asio's epoll reactor tries every read at once ("speculatively") unless the last read
// on that socket reported itself exhausted, and its socket read reports that only at end of
// stream. On a keep-alive connection the next request, or the upstream's answer, has almost
// never arrived when the read starts, so that recv returns EAGAIN: one wasted system call per
// read, two per forwarded request. nginx instead reads only after epoll reported data.
//
// This read reports itself exhausted when the kernel says the socket holds nothing more after
// it: Linux's TCP_INQ hint (socket_calls.hpp), which counts an end of stream not read yet. The
// reactor then skips the speculative attempt on the next read and queues it, with no system
// call. It cannot miss data: every arrival after the recv raises an edge-triggered epoll event,
// which sets the reactor's "try at once" flag again and performs the queued read; the flag is
// written under the descriptor's lock, in the same critical section as the recv that cleared
// it. Nor an end of stream that came in with the last bytes read, which raises no event of its
// own: the hint counts it, and the next read stays speculative and finds it. (A short read alone
// would not tell: reading a client's request emptied the socket of bytes, and its FIN, sent
// right behind, waited for a timeout.) Without the hint, every read stays speculative, as in
// Asio.
//
// This is built on Asio's reactor internals (its reactor_op, the socket's implementation), so
// it is tied to the Boost version Debian 12 ships; the assertions below stop a build on any
// other. Only socket_read.hpp includes it, and only when the build turns it on: elsewhere
// Stream reads through Asio's public async_read_some. Per-operation cancellation is not wired: the
// request path's handlers (Stream's) carry no cancellation slot, and closing the socket ends a
// pending read as usual.

static_assert(BOOST_ASIO_VERSION == 102600, "drain_aware_read.hpp follows Asio 1.26's reactor");
#if !defined(BOOST_ASIO_HAS_EPOLL) || defined(BOOST_ASIO_HAS_IO_URING_AS_DEFAULT)
#error "drain_aware_read.hpp needs Asio's epoll reactor"
#endif

namespace sluice::io {
namespace drain_aware_detail {

namespace detail = net::detail;

/// The reactor operation: one non-blocking recv, "exhausted" when it came back short.
template <class MutableBuffers, class Handler>
class ReceiveOperation : public detail::reactor_op {
 public:
  BOOST_ASIO_DEFINE_HANDLER_PTR(ReceiveOperation);

  ReceiveOperation(detail::socket_type socket, const MutableBuffers& buffers, Handler& handler,
                   const Executor& io_executor)
      : reactor_op(boost::system::error_code(), &ReceiveOperation::perform_receive,
                   &ReceiveOperation::complete),
        socket_(socket),
        buffers_(buffers),
        handler_(std::move(handler)),
        work_(handler_, io_executor) {}

 private:
  using Adapter = detail::buffer_sequence_adapter<net::mutable_buffer, MutableBuffers>;

  static status perform_receive(reactor_op* base) {
    auto* self = static_cast<ReceiveOperation*>(base);
    Adapter buffers(self->buffers_);
    bool received = true;
    bool more = true;
    if constexpr (Adapter::is_single_buffer) {
      const net::mutable_buffer into = Adapter::first(self->buffers_);
      self->bytes_transferred_ =
          receive_some(self->socket_, into.data(), into.size(), self->ec_, more);
      received = self->ec_ != net::error::would_block && self->ec_ != net::error::try_again;
    } else {
      received =
          detail::socket_ops::non_blocking_recv(self->socket_, buffers.buffers(), buffers.count(),
                                                0, true, self->ec_, self->bytes_transferred_);
    }
    if (!received) {
      return not_done;  // nothing there: wait for epoll
    }
    return more || self->ec_ ? done : done_and_exhausted;
  }

  static void complete(void* owner, detail::operation* base, const boost::system::error_code&,
                       std::size_t) {
    auto* self = static_cast<ReceiveOperation*>(base);
    ptr p = {detail::addressof(self->handler_), self, self};
    detail::handler_work<Handler, Executor> work(std::move(self->work_));
    // The handler is moved out before the operation's memory is freed: it may own that memory.
    detail::binder2<Handler, boost::system::error_code, std::size_t> bound(
        self->handler_, self->ec_, self->bytes_transferred_);
    p.h = detail::addressof(bound.handler_);
    p.reset();
    if (owner) {
      detail::fenced_block fence(detail::fenced_block::half);
      work.complete(bound, bound.handler_);
    }
  }

  detail::socket_type socket_;
  MutableBuffers buffers_;
  Handler handler_;
  detail::handler_work<Handler, Executor> work_;
};

/// True while a wait starts on a socket whose recv, just before in the same run of the loop,
/// found nothing (EAGAIN): the wait's attempt at once then needs no peek to know it would find
/// nothing. Bytes that come after that recv raise an edge-triggered epoll event, which the loop
/// handles only after the wait is queued, so it cannot miss them. Per thread: an attempt made on
/// an epoll event, never inside a start, does not see it.
inline thread_local bool starting_wait_on_empty_socket = false;

/// The reactor operation of a wait for bytes to read: done when a peek at the socket finds a
/// byte, an end of stream or an error; performed at once when the socket may hold bytes (no read
/// since the last event reported it emptied), and again on each epoll event. The peek matters:
/// "may hold bytes" is also true after an event that came in before a read took its bytes (the
/// event is handled after the read), and a wait done on that alone would end with nothing there,
/// which woke every parked connection at once. Asio's own wait always queues, and so would miss
/// bytes whose event was handled while no operation waited.
template <class Handler>
class WaitOperation : public detail::reactor_op {
 public:
  BOOST_ASIO_DEFINE_HANDLER_PTR(WaitOperation);

  WaitOperation(detail::socket_type socket, Handler& handler, const Executor& io_executor)
      : reactor_op(boost::system::error_code(), &WaitOperation::perform_wait,
                   &WaitOperation::complete),
        socket_(socket),
        handler_(std::move(handler)),
        work_(handler_, io_executor) {}

 private:
  static status perform_wait(reactor_op* base) {
    if (starting_wait_on_empty_socket) {
      return not_done;  // its recv found nothing just now: no peek
    }
    auto* self = static_cast<WaitOperation*>(base);
    return has_bytes_or_end(self->socket_) ? done : not_done;
  }

  static void complete(void* owner, detail::operation* base, const boost::system::error_code&,
                       std::size_t) {
    auto* self = static_cast<WaitOperation*>(base);
    ptr p = {detail::addressof(self->handler_), self, self};
    detail::handler_work<Handler, Executor> work(std::move(self->work_));
    detail::binder1<Handler, boost::system::error_code> bound(self->handler_, self->ec_);
    p.h = detail::addressof(bound.handler_);
    p.reset();
    if (owner) {
      detail::fenced_block fence(detail::fenced_block::half);
      work.complete(bound, bound.handler_);
    }
  }

  detail::socket_type socket_;
  Handler handler_;
  detail::handler_work<Handler, Executor> work_;
};

/// Reaches the socket's reactor-level state, which basic_socket keeps protected. (A pointer to
/// a protected member, formed through a derived class, may be applied to a base object.)
struct SocketInternals : Socket {
  static auto& implementation(Socket& socket) {
    return (socket.*(&SocketInternals::impl_)).get_implementation();
  }
};

}  // namespace drain_aware_detail

/// The event loop's reactor, on which the reads below wait. Look it up once per socket, not per
/// read: the lookup takes the io_context's service registry lock.
using Reactor = net::detail::reactor;
inline Reactor& reactor_of(const Executor& executor) {
  return net::use_service<Reactor>(net::query(executor, net::execution::context));
}

/// Reads some bytes from `socket` into `buffers`, as socket.async_read_some does, and lets the
/// event loop wait for epoll before the next read when this one emptied the socket. `reactor`
/// is the socket's loop's (reactor_of).
template <class MutableBuffers, class Handler>
void async_read_some_drain_aware(Socket& socket, Reactor& reactor, const MutableBuffers& buffers,
                                 Handler&& handler) {
  namespace detail = net::detail;
  using Operation = drain_aware_detail::ReceiveOperation<MutableBuffers, std::decay_t<Handler>>;
  auto& implementation = drain_aware_detail::SocketInternals::implementation(socket);
  const bool is_continuation = boost_asio_handler_cont_helpers::is_continuation(handler);

  typename Operation::ptr p = {detail::addressof(handler), Operation::ptr::allocate(handler),
                               nullptr};
  p.p = new (p.v) Operation(implementation.socket_, buffers, handler, socket.get_executor());

  // The recv must not block the loop; Asio's own reads set this the same way.
  const bool non_blocking = (implementation.state_ & detail::socket_ops::non_blocking) ||
                            detail::socket_ops::set_internal_non_blocking(
                                implementation.socket_, implementation.state_, true, p.p->ec_);
  if (!non_blocking || net::buffer_size(buffers) == 0) {
    reactor.post_immediate_completion(p.p, is_continuation);
  } else {
    reactor.start_op(detail::reactor::read_op, implementation.socket_, implementation.reactor_data_,
                     p.p, is_continuation, true);
  }
  p.v = p.p = nullptr;
}

}  // namespace sluice::io

namespace sluice::io {

/// Waits until `socket` has bytes to read (or an end of stream, or an error), reading none: at
/// once if they are there, else when epoll next reports some. `reactor` is the socket's loop's
/// (reactor_of).
/// `known_empty`: a recv on the socket found nothing just now (see
/// starting_wait_on_empty_socket), so the wait makes no system call to start.
template <class Handler>
void async_wait_readable_drain_aware(Socket& socket, Reactor& reactor, Handler&& handler,
                                     bool known_empty = false) {
  namespace detail = net::detail;
  using Operation = drain_aware_detail::WaitOperation<std::decay_t<Handler>>;
  auto& implementation = drain_aware_detail::SocketInternals::implementation(socket);
  const bool is_continuation = boost_asio_handler_cont_helpers::is_continuation(handler);

  typename Operation::ptr p = {detail::addressof(handler), Operation::ptr::allocate(handler),
                               nullptr};
  p.p = new (p.v) Operation(implementation.socket_, handler, socket.get_executor());
  drain_aware_detail::starting_wait_on_empty_socket = known_empty;
  reactor.start_op(detail::reactor::read_op, implementation.socket_, implementation.reactor_data_,
                   p.p, is_continuation, true);
  drain_aware_detail::starting_wait_on_empty_socket = false;
  p.v = p.p = nullptr;
}

}  // namespace sluice::io
