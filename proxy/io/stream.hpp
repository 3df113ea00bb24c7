#pragma once

#include <boost/asio/associated_allocator.hpp>
#include <boost/asio/associated_executor.hpp>
#include <boost/asio/async_result.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/beast/core/bind_handler.hpp>
#include <boost/beast/core/error.hpp>
#include <chrono>
#include <memory>
#include <utility>

#include "limiter/clock.hpp"
#include "proxy/io/net.hpp"
#include "proxy/io/socket_read.hpp"

namespace sluice::io {

/// A TCP connection on the request path: a socket with one deadline for its reads and writes,
/// for Beast's HTTP algorithms (an AsyncReadStream and AsyncWriteStream). It does what
/// beast::tcp_stream does, but arms its timer lazily, because the request path pays for it on
/// every exchange: tcp_stream starts and cancels a timer around every operation. Here, moving a
/// deadline later (the usual case) touches no timer: a timer that fires before the deadline
/// re-arms itself for it, and only a deadline earlier than the waiting timer's re-arms it.
/// When the deadline passes, the socket is closed and the operations in progress, or started
/// later, end with beast::error::timeout, as with tcp_stream. The stream must outlive its
/// operations (its owner awaits them). The socket is put in non-blocking mode (see
/// socket_io.hpp). A read that empties the socket makes the next one wait for epoll rather than
/// try a recv first, where the build allows it (socket_read.hpp).
class Stream {
 public:
  using executor_type = Executor;
  using Clock = std::chrono::steady_clock;

  explicit Stream(Socket socket);
  explicit Stream(const executor_type& executor);
  ~Stream();
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;
  Stream(Stream&&) = delete;
  Stream& operator=(Stream&&) = delete;

  executor_type get_executor() noexcept { return socket_.get_executor(); }
  Socket& socket() noexcept { return socket_; }

  /// Operations from now on must be over within `timeout`.
  void expires_after(limiter::Duration timeout);
  /// Operations from now on must be over by `at` (a time the caller has just read).
  void expires_at(Clock::time_point at);
  void expires_never() noexcept;
  /// Drops the deadline and its timer until the next expires_after or expires_at, for a
  /// connection whose owner times its wait itself (a parked client connection: its timer and
  /// deadline are a third of what it would keep).
  void forget_deadline() noexcept;
  /// Whether the deadline passed (and the socket was closed).
  bool timed_out() const noexcept { return deadline_ && deadline_->expired; }

  template <class MutableBuffers, class Token>
  auto async_read_some(const MutableBuffers& buffers, Token&& token) {
    return net::async_initiate<Token, void(beast::error_code, std::size_t)>(
        [this](auto handler, const MutableBuffers& into) {
          start(
              std::move(handler),
              [&](auto completion) {
                reader_.async_read_some(socket_, into, std::move(completion));
              },
              std::size_t{0});
        },
        token, buffers);
  }

  template <class ConstBuffers, class Token>
  auto async_write_some(const ConstBuffers& buffers, Token&& token) {
    return net::async_initiate<Token, void(beast::error_code, std::size_t)>(
        [this](auto handler, const ConstBuffers& from) {
          start(
              std::move(handler),
              [&](auto completion) { socket_.async_write_some(from, std::move(completion)); },
              std::size_t{0});
        },
        token, buffers);
  }

  /// Waits until the socket may have bytes to read, or its peer closed it, and reads none: a
  /// connection waiting for its next request needs no buffer for it. The read that follows
  /// finds the bytes (or, rarely, none yet, and waits for them).
  template <class Token>
  auto async_wait_readable(Token&& token) {
    return net::async_initiate<Token, void(beast::error_code)>(
        [this](auto handler) {
          start(std::move(handler), [&](auto completion) {
            reader_.async_wait_readable(socket_, std::move(completion));
          });
        },
        token);
  }

 private:
  /// Shared with its timer's handler, which may run after the stream is gone.
  struct Deadline {
    Deadline(const executor_type& executor, Socket* socket_of)
        : timer(executor), socket(socket_of) {}
    Timer timer;
    Clock::time_point at = Clock::time_point::max();     ///< The deadline itself.
    Clock::time_point armed = Clock::time_point::max();  ///< When the waiting timer fires.
    bool expired = false;
    Socket* socket;  ///< Null once the stream is gone.
  };

  /// Wraps a handler: reports an operation cut short by the deadline as a timeout. Runs on the
  /// handler's own executor.
  template <class Handler>
  struct Completion {
    Handler handler;
    Stream* stream;

    using executor_type = net::associated_executor_t<Handler, Stream::executor_type>;
    executor_type get_executor() const noexcept {
      return net::get_associated_executor(handler, stream->socket_.get_executor());
    }
    using allocator_type = net::associated_allocator_t<Handler>;
    allocator_type get_allocator() const noexcept { return net::get_associated_allocator(handler); }

    template <class... Results>
    void operator()(beast::error_code ec, Results... results) {
      if (ec == net::error::operation_aborted && stream->timed_out()) {
        ec = beast::error::timeout;
      }
      std::move(handler)(ec, results...);
    }
  };

  /// Starts an operation on the socket with `handler` wrapped, or ends it with a timeout if
  /// the deadline has passed.
  /// `nothing`: what the operation reports besides its error when it ends before it starts
  /// (0 bytes for a read or a write).
  template <class Handler, class Operation, class... Nothing>
  void start(Handler handler, Operation operation, Nothing... nothing) {
    if (timed_out()) {
      complete_later(std::move(handler), nothing...);
      return;
    }
    operation(Completion<Handler>{std::move(handler), this});
  }

  /// Ends an operation with a timeout before it starts, never inside its initiation.
  template <class Handler, class... Nothing>
  void complete_later(Handler handler, Nothing... nothing) {
    const auto executor = net::get_associated_executor(handler, socket_.get_executor());
    net::post(executor,
              beast::bind_front_handler(std::move(handler),
                                        beast::error_code(beast::error::timeout), nothing...));
  }

  static void arm(const std::shared_ptr<Deadline>& deadline, Clock::time_point at);
  static void on_timer(const std::shared_ptr<Deadline>& deadline, const beast::error_code& ec);

  Socket socket_;
  SocketReader reader_;
  std::shared_ptr<Deadline> deadline_;  ///< Null after forget_deadline() until the next one.
};

}  // namespace sluice::io
