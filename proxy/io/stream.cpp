#include "proxy/io/stream.hpp"

namespace sluice::io {

Stream::Stream(Socket socket)
    : socket_(std::move(socket)),
      reader_(socket_.get_executor()),
      deadline_(std::make_shared<Deadline>(socket_.get_executor(), &socket_)) {
  beast::error_code ignored;
  socket_.non_blocking(true, ignored);
}

Stream::Stream(const executor_type& executor)
    : socket_(executor),
      reader_(executor),
      deadline_(std::make_shared<Deadline>(executor, &socket_)) {}

Stream::~Stream() {
  tls_.reset();  // it refers to the socket
  forget_deadline();
}

void Stream::start_tls(net::ssl::context& context) {
  tls_ = std::make_unique<TlsSession>(context, socket_);
}

bool Stream::tls_can_close_cleanly() const noexcept {
  if (!tls_) {
    return false;
  }
  SSL* ssl = tls_->handle();
  // A fatal alert, sent or received, marks the connection shut in OpenSSL.
  return SSL_is_init_finished(ssl) == 1 && SSL_get_shutdown(ssl) == 0;
}

bool Stream::tls_buffered() const noexcept {
  if (!tls_) {
    return false;
  }
  // Decrypted bytes not read yet, or records (or parts of them) read ahead from the socket and
  // not decrypted yet.
  return SSL_has_pending(tls_->handle()) == 1;
}

void Stream::forget_deadline() noexcept {
  if (deadline_) {
    deadline_->socket = nullptr;
    deadline_->timer.cancel();  // its handler, which shares the deadline, frees it
    deadline_.reset();
  }
}

void Stream::expires_after(Duration timeout) {
  // The full clock: the coarse one can lag by more than its tick on a tickless kernel, and
  // a deadline must not end early.
  expires_at(Clock::now() + std::chrono::duration_cast<Clock::duration>(timeout));
}

void Stream::expires_at(Clock::time_point at) {
  if (!deadline_) {
    deadline_ = std::make_shared<Deadline>(socket_.get_executor(), &socket_);
  }
  deadline_->at = at;
  deadline_->expired = false;
  if (at < deadline_->armed) {
    arm(deadline_, at);
  }
}

void Stream::expires_never() noexcept {
  if (!deadline_) {
    return;
  }
  deadline_->at = Clock::time_point::max();
  deadline_->expired = false;
}

void Stream::arm(const std::shared_ptr<Deadline>& deadline, Clock::time_point at) {
  deadline->armed = at;
  deadline->timer.expires_at(at);  // a wait already there ends with operation_aborted
  deadline->timer.async_wait([deadline](const beast::error_code& ec) { on_timer(deadline, ec); });
}

void Stream::on_timer(const std::shared_ptr<Deadline>& deadline, const beast::error_code& ec) {
  if (ec == net::error::operation_aborted || deadline->socket == nullptr) {
    return;  // re-armed, or the stream is gone
  }
  deadline->armed = Clock::time_point::max();
  if (deadline->at == Clock::time_point::max()) {
    return;
  }
  if (Clock::now() < deadline->at) {
    arm(deadline, deadline->at);  // the deadline moved later since the timer was set
    return;
  }
  deadline->expired = true;
  beast::error_code ignored;
  deadline->socket->close(ignored);
}

}  // namespace sluice::io
