#pragma once

#include <array>
#include <boost/asio/associated_allocator.hpp>
#include <boost/asio/associated_executor.hpp>
#include <boost/asio/async_result.hpp>
#include <boost/asio/compose.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/ssl/context.hpp>
#include <boost/asio/ssl/error.hpp>
#include <boost/asio/ssl/stream_base.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/beast/core/bind_handler.hpp>
#include <boost/beast/core/error.hpp>
#include <chrono>
#include <memory>
#include <optional>
#include <utility>

#include "proxy/io/net.hpp"
#include "proxy/io/socket_read.hpp"
#include "proxy/io/tls_session.hpp"

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
/// through OpenSSL, which reads and writes the socket itself (tls_session.hpp), waiting for the
/// socket under the same deadline when OpenSSL asks to; callers that write to the socket
/// themselves (send_now, the relay's receive_now) see secure() and take the async path. TLS's
/// reads try OpenSSL at once rather than wait for epoll first: a peer's close that came with its
/// last record must not wait for an event that will not come.
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
  SSL* tls_handle() noexcept { return tls_ ? tls_->handle() : nullptr; }

  /// Sends TLS's close_notify, within the deadline, and does not wait for the peer's (as
  /// nginx closes): the connection closes next either way.
  template <class Token>
  auto async_tls_shutdown(Token&& token) {
    SSL* ssl = tls_->handle();
    SSL_set_shutdown(ssl, SSL_get_shutdown(ssl) | SSL_RECEIVED_SHUTDOWN);
    return net::async_initiate<Token, void(beast::error_code)>(
        [this](auto handler) {
          start_tls_step(std::move(handler), [this] { return tls_->shutdown(); });
        },
        token);
  }
  /// Whether TLS is established and not failed or closed: a close_notify can be sent.
  bool tls_can_close_cleanly() const noexcept;

  /// The TLS handshake, as a server or a client, within the stream's deadline.
  template <class Token>
  auto async_handshake(net::ssl::stream_base::handshake_type role, Token&& token) {
    tls_->begin_handshake(role);
    return net::async_initiate<Token, void(beast::error_code)>(
        [this](auto handler) {
          start_tls_step(std::move(handler), [this] { return tls_->handshake(); });
        },
        token);
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
            start_tls_step(
                std::move(handler),
                [this, first = TlsSession::first_buffer(into)] { return tls_->read(first); },
                std::size_t{0});
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
            start_tls_step(
                std::move(handler),
                [this, from] {
                  std::array<net::const_buffer, 16> pieces;
                  return tls_->write(TlsSession::first_buffers(from, pieces));
                },
                std::size_t{0});
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
  /// One TLS operation: makes OpenSSL's step (`attempt`), waits for the socket whenever it
  /// asks to, and makes it again. A step done during the initiation completes through a post,
  /// never inside it. Completes with (error, bytes) when `kBytes`, else with (error).
  template <class Attempt, bool kBytes>
  struct TlsOperation {
    Stream* stream;
    Attempt attempt;
    bool initiating = true;
    std::optional<TlsSession::Step> finished;  ///< Done during the initiation, not reported.

    template <class Self>
    void operator()(Self& self, beast::error_code waited = {}) {
      if (finished) {
        finish(self, *finished);
        return;
      }
      const bool initiation = std::exchange(initiating, false);
      if (waited) {
        finish(self, TlsSession::Step{TlsSession::Wait::none, waited, 0});
        return;
      }
      const TlsSession::Step step = attempt();
      if (step.wait == TlsSession::Wait::readable) {
        // Nothing in OpenSSL's read buffer: a connection waiting for its client's next request
        // holds none. OpenSSL's last recv found nothing: wait with no system call to start.
        stream->tls_->release_buffers();
        stream->reader_.async_wait_readable_after_empty_recv(stream->socket_, std::move(self));
        return;
      }
      if (step.wait == TlsSession::Wait::writable) {  // rare: the socket's send buffer is full
        stream->socket_.async_wait(Socket::wait_write, std::move(self));
        return;
      }
      if (initiation) {
        finished = step;
        net::post(std::move(self));
        return;
      }
      finish(self, step);
    }

    template <class Self>
    static void finish(Self& self, const TlsSession::Step& step) {
      if constexpr (kBytes) {
        self.complete(step.error, step.bytes);
      } else {
        self.complete(step.error);
      }
    }
  };

  /// Starts a TLS operation under the deadline (see TlsOperation; `nothing` as in start).
  template <class Handler, class Attempt, class... Nothing>
  void start_tls_step(Handler handler, Attempt attempt, Nothing... nothing) {
    constexpr bool kBytes = sizeof...(Nothing) > 0;
    using Signature =
        std::conditional_t<kBytes, void(beast::error_code, std::size_t), void(beast::error_code)>;
    start(
        std::move(handler),
        [&](auto completion) {
          net::async_compose<decltype(completion), Signature>(
              TlsOperation<Attempt, kBytes>{this, std::move(attempt), true, std::nullopt},
              completion, socket_);
        },
        nothing...);
  }

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
  std::unique_ptr<TlsSession> tls_;     ///< Null: cleartext.
};

}  // namespace sluice::io
