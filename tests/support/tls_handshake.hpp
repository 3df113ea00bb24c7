#pragma once
// A real TLS handshake between two OpenSSL endpoints in one thread, over a BIO pair instead of
// a socket: for the TLS layer's unit tests (contexts, tickets, peer certificates), which need
// OpenSSL's behaviour but no network.

#include <openssl/ssl.h>

#include <memory>
#include <stdexcept>

namespace sluice::test {

/// One client and one server SSL joined by a BIO pair. Owns both.
class TlsHandshake {
 public:
  TlsHandshake(SSL_CTX* client_context, SSL_CTX* server_context)
      : client_(SSL_new(client_context)), server_(SSL_new(server_context)) {
    BIO* client_end = nullptr;
    BIO* server_end = nullptr;
    BIO_new_bio_pair(&client_end, 0, &server_end, 0);
    SSL_set_bio(client_.get(), client_end, client_end);
    SSL_set_bio(server_.get(), server_end, server_end);
    SSL_set_connect_state(client_.get());
    SSL_set_accept_state(server_.get());
  }

  TlsHandshake(const TlsHandshake&) = delete;
  TlsHandshake& operator=(const TlsHandshake&) = delete;
  TlsHandshake(TlsHandshake&&) = delete;
  TlsHandshake& operator=(TlsHandshake&&) = delete;
  /// Ends both sides as closed cleanly: OpenSSL marks the session of a connection freed without
  /// a shutdown as not resumable.
  ~TlsHandshake() {
    SSL_set_shutdown(client_.get(), SSL_SENT_SHUTDOWN | SSL_RECEIVED_SHUTDOWN);
    SSL_set_shutdown(server_.get(), SSL_SENT_SHUTDOWN | SSL_RECEIVED_SHUTDOWN);
  }

  SSL* client() const noexcept { return client_.get(); }
  SSL* server() const noexcept { return server_.get(); }

  /// Runs both sides until both are done or one fails; whether both finished. Then lets the
  /// client read what the server sent after the handshake (TLS 1.3 session tickets).
  bool run() {
    bool client_done = false;
    bool server_done = false;
    for (int round = 0; round < 20 && !(client_done && server_done); ++round) {
      client_done = client_done || step(client_.get());
      server_done = server_done || step(server_.get());
      if (failed_) {
        return false;
      }
    }
    if (client_done && server_done) {
      char byte = 0;
      SSL_read(client_.get(), &byte, 1);  // processes the tickets; there is no data
      SSL_read(server_.get(), &byte, 1);
    }
    return client_done && server_done;
  }

  /// The client's session after run(), for a later handshake to resume.
  SSL_SESSION* session() const { return SSL_get1_session(client_.get()); }

 private:
  struct Free {
    void operator()(SSL* ssl) const noexcept { SSL_free(ssl); }
  };

  bool step(SSL* ssl) {
    const int result = SSL_do_handshake(ssl);
    if (result == 1) {
      return true;
    }
    const int error = SSL_get_error(ssl, result);
    if (error != SSL_ERROR_WANT_READ && error != SSL_ERROR_WANT_WRITE) {
      failed_ = true;
    }
    return false;
  }

  std::unique_ptr<SSL, Free> client_;
  std::unique_ptr<SSL, Free> server_;
  bool failed_ = false;
};

}  // namespace sluice::test
