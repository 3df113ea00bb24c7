#pragma once

#include <boost/asio/associated_allocator.hpp>
#include <boost/asio/associated_executor.hpp>
#include <boost/asio/async_result.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/ssl/context.hpp>
#include <boost/asio/ssl/stream.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/beast/core/bind_handler.hpp>
#include <boost/beast/core/error.hpp>
#include <chrono>
#include <memory>
#include <utility>

#include "proxy/io/net.hpp"
#include "proxy/io/socket_read.hpp"

namespace sluice::io {

/// An error of TLS itself (a bad record, an alert, a peer gone without close_notify): the
/// connection cannot carry an answer.
inline bool is_tls_error(const beast::error_code& error) noexcept {
  return error.category() == net::error::get_ssl_category() ||
         error.category() == net::ssl::error::get_stream_category();
}

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
///
/// A stream may carry TLS (start_tls, then async_handshake): its reads and writes then go
/// through an Asio ssl::stream laid over the socket and its deadline, and callers that write to
/// the socket themselves (send_now, the relay's receive_now) see secure() and take the async
/// path. TLS's own reads try the socket at once (Asio's speculative read) rather than the
/// drain-aware one: a peer's close that came with its last record must not wait for an epoll
/// event that will not come.
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

  /// Lays TLS over the connection, with `context`'s certificates and settings (it must outlive
  /// the stream: contexts are shared_ptr-held by their owners, see proxy/tls/). Reads and writes
  /// are encrypted from the handshake on.
  void start_tls(net::ssl::context& context);
  /// Whether reads and writes go through TLS.
  bool secure() const noexcept { return tls_ != nullptr; }
  /// The connection's OpenSSL object (for SNI, verification and the peer's certificate); null
  /// without TLS.
  SSL* tls_handle() noexcept { return tls_ ? tls_->native_handle() : nullptr; }

  /// Sends TLS's close_notify, within the deadline, and does not wait for the peer's (as
  /// nginx closes): the connection closes next either way.
  template <class Token>
  auto async_tls_shutdown(Token&& token) {
    SSL* ssl = tls_->native_handle();
    SSL_set_shutdown(ssl, SSL_get_shutdown(ssl) | SSL_RECEIVED_SHUTDOWN);
    return tls_->async_shutdown(std::forward<Token>(token));
  }
  /// Whether TLS is established and not failed or closed: a close_notify can be sent.
  bool tls_can_close_cleanly() const noexcept;

  /// The TLS handshake, as a server or a client, within the stream's deadline.
  template <class Token>
  auto async_handshake(net::ssl::stream_base::handshake_type role, Token&& token) {
    return tls_->async_handshake(role, std::forward<Token>(token));
  }

  /// Operations from now on must be over within `timeout`.
  void expires_after(Duration timeout);
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
          if (tls_) {
            tls_->async_read_some(into, std::move(handler));
            return;
          }
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
          if (tls_) {
            tls_->async_write_some(from, std::move(handler));
            return;
          }
          write_to_socket(from, std::move(handler));
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
          if (tls_buffered()) {  // TLS read more than it decrypted: no wait for the socket
            complete_later(std::move(handler), beast::error_code{});
            return;
          }
          start(std::move(handler), [&](auto completion) {
            reader_.async_wait_readable(socket_, std::move(completion));
          });
        },
        token);
  }

 private:
  /// What TLS reads and writes through: this stream's socket, with its deadline.
  class Transport {
   public:
    using executor_type = Executor;
    using lowest_layer_type = Socket;
    explicit Transport(Stream& stream) : stream_(&stream) {}
    executor_type get_executor() noexcept { return stream_->socket_.get_executor(); }
    lowest_layer_type& lowest_layer() noexcept { return stream_->socket_; }

    template <class MutableBuffers, class Handler>
    void async_read_some(const MutableBuffers& buffers, Handler&& handler) {
      stream_->start(
          std::forward<Handler>(handler),
          [&](auto completion) {
            stream_->socket_.async_read_some(buffers, std::move(completion));
          },
          std::size_t{0});
    }
    template <class ConstBuffers, class Handler>
    void async_write_some(const ConstBuffers& buffers, Handler&& handler) {
      stream_->write_to_socket(buffers, std::forward<Handler>(handler));
    }

   private:
    Stream* stream_;
  };

  template <class ConstBuffers, class Handler>
  void write_to_socket(const ConstBuffers& buffers, Handler&& handler) {
    start(
        std::forward<Handler>(handler),
        [&](auto completion) { socket_.async_write_some(buffers, std::move(completion)); },
        std::size_t{0});
  }

  /// Whether TLS holds bytes it read from the socket and no read has taken yet.
  bool tls_buffered() const noexcept;

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
      complete_later(std::move(handler), beast::error::timeout, nothing...);
      return;
    }
    operation(Completion<Handler>{std::move(handler), this});
  }

  /// Ends an operation with `result` (a timeout, by default) before it starts, never inside
  /// its initiation.
  template <class Handler, class... Nothing>
  void complete_later(Handler handler, beast::error_code result, Nothing... nothing) {
    const auto executor = net::get_associated_executor(handler, socket_.get_executor());
    net::post(executor, beast::bind_front_handler(std::move(handler), result, nothing...));
  }

  static void arm(const std::shared_ptr<Deadline>& deadline, Clock::time_point at);
  static void on_timer(const std::shared_ptr<Deadline>& deadline, const beast::error_code& ec);

  Socket socket_;
  SocketReader reader_;
  std::shared_ptr<Deadline> deadline_;  ///< Null after forget_deadline() until the next one.
  std::unique_ptr<net::ssl::stream<Transport>> tls_;  ///< Null: cleartext.
};

}  // namespace sluice::io
