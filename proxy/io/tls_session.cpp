#include "proxy/io/tls_session.hpp"

#include <openssl/err.h>

#include <boost/asio/ssl/error.hpp>
#include <cstring>

#include "proxy/io/socket_calls.hpp"

namespace sluice::io {
namespace {

TlsSession::Link& link_of(BIO* bio) { return *static_cast<TlsSession::Link*>(BIO_get_data(bio)); }

int read_socket(BIO* bio, char* data, int size) {
  BIO_clear_retry_flags(bio);
  TlsSession::Link& link = link_of(bio);
  beast::error_code error;
  bool more = false;
  const std::size_t got =
      receive_some(link.socket->native_handle(), data, static_cast<std::size_t>(size), error, more);
  if (!error || error == net::error::eof) {
    return static_cast<int>(got);  // 0: the peer closed the connection
  }
  if (error == net::error::would_block || error == net::error::try_again) {
    BIO_set_retry_read(bio);
  } else {
    link.error = error.value();
  }
  return -1;
}

int write_socket(BIO* bio, const char* data, int size) {
  BIO_clear_retry_flags(bio);
  TlsSession::Link& link = link_of(bio);
  beast::error_code error;
  const net::const_buffer piece(data, static_cast<std::size_t>(size));
  const std::size_t sent = send_some(link.socket->native_handle(), {&piece, 1}, error);
  if (!error) {
    return static_cast<int>(sent);
  }
  if (error == net::error::would_block || error == net::error::try_again) {
    BIO_set_retry_write(bio);
  } else {
    link.error = error.value();
  }
  return -1;
}

long control_socket(BIO* /*bio*/, int command, long /*number*/, void* /*pointer*/) {
  return command == BIO_CTRL_FLUSH ? 1 : 0;  // nothing is buffered here to flush
}

int open_socket_bio(BIO* bio) {
  BIO_set_init(bio, 1);
  return 1;
}

/// The BIO method over a Link: made once, shared by every session.
BIO_METHOD* socket_method() {
  static BIO_METHOD* const method = [] {
    BIO_METHOD* made = BIO_meth_new(BIO_get_new_index() | BIO_TYPE_SOURCE_SINK, "sluice socket");
    BIO_meth_set_read(made, read_socket);
    BIO_meth_set_write(made, write_socket);
    BIO_meth_set_ctrl(made, control_socket);
    BIO_meth_set_create(made, open_socket_bio);
    return made;
  }();
  return method;
}

[[noreturn]] void throw_openssl_error(const char* what) {
  throw beast::system_error(
      beast::error_code(static_cast<int>(ERR_get_error()), net::error::get_ssl_category()), what);
}

}  // namespace

TlsSession::TlsSession(net::ssl::context& context, Socket& socket)
    : link_{&socket}, ssl_(SSL_new(context.native_handle())) {
  if (ssl_ == nullptr) {
    throw_openssl_error("SSL_new");
  }
  SSL_set_mode(ssl_, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER |
                         SSL_MODE_RELEASE_BUFFERS);
  SSL_set_read_ahead(ssl_, 1);  // one recv for what the socket holds, not one per record part
  BIO* bio = BIO_new(socket_method());
  if (bio == nullptr) {
    SSL_free(ssl_);
    throw_openssl_error("BIO_new");
  }
  BIO_set_data(bio, &link_);
  SSL_set_bio(ssl_, bio, bio);
}

TlsSession::~TlsSession() { SSL_free(ssl_); }

void TlsSession::begin_handshake(net::ssl::stream_base::handshake_type role) noexcept {
  if (role == net::ssl::stream_base::server) {
    SSL_set_accept_state(ssl_);
  } else {
    SSL_set_connect_state(ssl_);
  }
}

TlsSession::Step TlsSession::handshake() {
  ERR_clear_error();
  link_.error = 0;
  return outcome(SSL_do_handshake(ssl_), 0);
}

TlsSession::Step TlsSession::read(net::mutable_buffer into) {
  if (into.size() == 0) {
    return {};
  }
  ERR_clear_error();
  link_.error = 0;
  std::size_t bytes = 0;
  const int result = SSL_read_ex(ssl_, into.data(), into.size(), &bytes);
  return outcome(result, bytes);
}

TlsSession::Step TlsSession::write(std::span<const net::const_buffer> from) {
  while (!from.empty() && from.front().size() == 0) {
    from = from.subspan(1);
  }
  if (from.empty()) {
    return {};
  }
  // Short buffers go out together, as one record; a long first one goes out by itself.
  std::array<char, kGatherLimit> gathered;
  net::const_buffer piece = from.front();
  if (from.size() > 1 && piece.size() < kGatherLimit) {
    std::size_t used = 0;
    for (const net::const_buffer& next : from) {
      if (next.size() > gathered.size() - used) {
        break;
      }
      std::memcpy(gathered.data() + used, next.data(), next.size());
      used += next.size();
    }
    if (used > piece.size()) {
      piece = net::const_buffer(gathered.data(), used);
    }
  }
  ERR_clear_error();
  link_.error = 0;
  std::size_t bytes = 0;
  const int result = SSL_write_ex(ssl_, piece.data(), piece.size(), &bytes);
  return outcome(result, bytes);
}

TlsSession::Step TlsSession::shutdown() {
  ERR_clear_error();
  link_.error = 0;
  const int result = SSL_shutdown(ssl_);
  // 0: close_notify sent and the peer's not received, which the caller does not wait for.
  return result >= 0 ? Step{} : outcome(result, 0);
}

TlsSession::Step TlsSession::outcome(int result, std::size_t bytes) {
  if (result > 0) {
    return {Wait::none, {}, bytes};
  }
  switch (SSL_get_error(ssl_, result)) {
    case SSL_ERROR_WANT_READ:
      return {Wait::readable, {}, 0};
    case SSL_ERROR_WANT_WRITE:
      return {Wait::writable, {}, 0};
    case SSL_ERROR_ZERO_RETURN:
      return {Wait::none, net::error::eof, 0};
    case SSL_ERROR_SYSCALL:
    case SSL_ERROR_SSL: {
      const unsigned long first = ERR_get_error();
      ERR_clear_error();
      if (first == 0 && link_.error != 0) {
        return {Wait::none, beast::error_code(link_.error, net::error::get_system_category()), 0};
      }
      // The peer closed the connection without close_notify (OpenSSL 3 reports it as its own
      // error; 1.1 as a system call failure with no errno).
      if (first == 0 || ERR_GET_REASON(first) == SSL_R_UNEXPECTED_EOF_WHILE_READING) {
        return {Wait::none, net::ssl::error::stream_truncated, 0};
      }
      return {Wait::none,
              beast::error_code(static_cast<int>(first), net::error::get_ssl_category()), 0};
    }
    default:
      return {Wait::none, net::ssl::error::unexpected_result, 0};
  }
}

}  // namespace sluice::io
