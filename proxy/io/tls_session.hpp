#pragma once

#include <openssl/ssl.h>

#include <array>
#include <boost/asio/buffer.hpp>
#include <boost/asio/ssl/context.hpp>
#include <boost/asio/ssl/stream_base.hpp>
#include <cstddef>
#include <span>

#include "proxy/io/net.hpp"

namespace sluice::io {

/// One connection's TLS, reading and writing its socket itself, as nginx does: records go
/// between the socket and the caller's buffers through OpenSSL alone. (Asio's ssl::stream puts a
/// BIO pair and two 17 KB buffers of its own between them, allocated and cleared for every
/// connection, and copies every byte through them.) OpenSSL reads ahead into its own buffer,
/// which SSL_MODE_RELEASE_BUFFERS frees while the connection idles.
///
/// Each call makes one OpenSSL step without waiting and says what it needs if it could not
/// finish: the socket readable or writable (Stream waits for it, then calls again). Errors come
/// back as Asio's ssl::stream reports them, so that callers see one TLS: net::error::eof after
/// the peer's close_notify, ssl::error::stream_truncated for a close without one, the socket's
/// errno for a reset, the ssl category for TLS's own. The socket is read through its handle at
/// each call, never a copy of its descriptor: once it is closed (by a deadline), OpenSSL's
/// reads and writes fail rather than reach a descriptor the kernel gave to another connection.
class TlsSession {
 public:
  enum class Wait { none, readable, writable };
  /// What a step did: `wait` says the step must be made again once the socket is ready;
  /// otherwise it is over, with `error` or with `bytes` read or written.
  struct Step {
    Wait wait = Wait::none;
    beast::error_code error;
    std::size_t bytes = 0;
  };
  /// What OpenSSL's reads and writes go through (the BIO's data).
  struct Link {
    Socket* socket;
    int error = 0;  ///< The errno of the last failed call, for SSL_ERROR_SYSCALL.
  };
  /// The most bytes of several buffers gathered into one record (a head and a short body go
  /// out as one record and one send).
  static constexpr std::size_t kGatherLimit = 4096;

  /// A session with `context`'s settings over `socket`; both must outlive it.
  TlsSession(net::ssl::context& context, Socket& socket);
  ~TlsSession();
  TlsSession(const TlsSession&) = delete;
  TlsSession& operator=(const TlsSession&) = delete;

  SSL* handle() const noexcept { return ssl_; }

  /// Takes the role for the handshake (once, before the first handshake step).
  void begin_handshake(net::ssl::stream_base::handshake_type role) noexcept;
  Step handshake();
  /// Reads into `into` (up to its size: what one record or more gave).
  Step read(net::mutable_buffer into);
  /// Writes the first of `from`, or the leading ones gathered together when they are short.
  /// A step that must be made again must be given the same bytes (OpenSSL holds its record).
  Step write(std::span<const net::const_buffer> from);
  /// Sends close_notify, without waiting for the peer's.
  Step shutdown();
  /// Frees OpenSSL's read and write buffers if they hold nothing (as nginx does for an idle
  /// connection): a read that waits for the peer would otherwise keep its 16 KB read buffer.
  /// Only once the handshake is over: it is what nginx has done for years, a handshake's
  /// buffers are not this call's to free.
  void release_buffers() noexcept {
    if (SSL_is_init_finished(ssl_) == 1) {
      SSL_free_buffers(ssl_);
    }
  }

  /// The first buffer of `buffers` that is not empty (an empty one if none is), as Asio's
  /// streams read into.
  template <class MutableBuffers>
  static net::mutable_buffer first_buffer(const MutableBuffers& buffers) {
    for (auto it = net::buffer_sequence_begin(buffers); it != net::buffer_sequence_end(buffers);
         ++it) {
      const net::mutable_buffer buffer(*it);
      if (buffer.size() > 0) {
        return buffer;
      }
    }
    return {};
  }

  /// Copies up to 16 of `buffers` into `into` and returns those copied.
  template <class ConstBuffers>
  static std::span<const net::const_buffer> first_buffers(const ConstBuffers& buffers,
                                                          std::array<net::const_buffer, 16>& into) {
    std::size_t count = 0;
    for (auto it = net::buffer_sequence_begin(buffers);
         it != net::buffer_sequence_end(buffers) && count < into.size(); ++it) {
      into[count++] = net::const_buffer(*it);
    }
    return {into.data(), count};
  }

 private:
  /// The step's outcome from OpenSSL's `result` (> 0: done, `bytes` moved).
  Step outcome(int result, std::size_t bytes);

  Link link_;
  SSL* ssl_;
};

}  // namespace sluice::io
