#pragma once

#include <cstddef>
#include <span>

#include "proxy/http/beast_http.hpp"
#include "proxy/io/net.hpp"

namespace sluice::http {

class HeadOut;

/// Fields that come after a body (an HTTP/2 message's trailers, gRPC's status), written into the
/// codec the body goes to.
class Trailers {
 public:
  virtual void write(HeadOut& out) const = 0;

 protected:
  ~Trailers() = default;
};

/// A piece of a message body on its way, lent by a BodySource until its BodySink has sent it.
struct BodyPiece {
  std::span<const char> bytes;
  bool last = false;                   ///< The body ends with it.
  const Trailers* trailers = nullptr;  ///< With the last piece, if the message has any.
};

/// Where a body comes from: an HTTP/1.1 message on a connection, an HTTP/2 client's stream, an
/// HTTP/2 upstream's call.
class BodySource {
 public:
  /// The next piece, when it is there without a wait: true, with `piece` (or the error that
  /// ended the body in `ec`). False when next() is to wait for it.
  virtual bool next_now(BodyPiece& piece, beast::error_code& ec) = 0;
  virtual io::Awaitable<beast::error_code> next(BodyPiece& piece) = 0;
  /// The sink is done with the last piece (sent, or never will be): its storage may be reused,
  /// and an HTTP/2 window reopens by as much.
  virtual void taken(std::size_t) noexcept {}

 protected:
  ~BodySource() = default;
};

/// Where a body goes, in its codec's framing: an HTTP/1.1 connection, an HTTP/2 client's
/// stream, an HTTP/2 upstream's call.
class BodySink {
 public:
  /// Sends `piece` as far as it goes without a wait: true when that is all of it (or the send
  /// failed: `ec`), else send_rest() finishes it.
  virtual bool send_now(const BodyPiece& piece, beast::error_code& ec) = 0;
  virtual io::Awaitable<beast::error_code> send_rest() = 0;
  /// Whether the send that send_now began has finished since (`ec` if it failed), for a sink
  /// whose sends finish as its peer takes the bytes (an HTTP/2 stream's): a loop that carries
  /// two bodies at once asks instead of waiting in send_rest(). False: it cannot tell.
  virtual bool sent_now(beast::error_code&) { return false; }

 protected:
  ~BodySink() = default;
};

/// Sees each piece of a body as it passes, without holding on to it (what a response cost,
/// read from its body: SPEC §9).
class BodyObserver {
 public:
  virtual void seen(const BodyPiece& piece) = 0;

 protected:
  ~BodyObserver() = default;
};

/// How carrying a body ended: clear, or the error and the side it came from.
struct Carried {
  beast::error_code error;
  bool source_failed = false;  ///< The source failed (else the sink, if `error`).
  bool started = false;        ///< A piece went out (an HTTP/1.1 head with the first).
};

/// Carries a body from a source to a sink, a piece at a time, each lent until it is sent: the
/// one body loop of every relay, both ways (the HTTP/2 to HTTP/2 relay runs two at once). now()
/// goes as far as it can without a wait, so that a body that is all there (the usual small one)
/// needs no coroutine frame; rest() goes on from there:
///
///     BodyCarry body(source, sink);
///     if (!body.now()) {
///       co_await body.rest();
///     }
///
/// (Not wrapped in a coroutine of its own: a frame more per request, and frames past the loop's
/// cache are allocated, which measured more than the rest of the loop on an h2c request.)
class BodyCarry {
 public:
  /// `observer`, if any, sees each piece as it comes from the source.
  BodyCarry(BodySource& source, BodySink& sink, BodyObserver* observer = nullptr) noexcept
      : source_(source), sink_(sink), observer_(observer) {}

  /// Carries what goes without a wait; true when the body is over (or failed). Called again
  /// after something changed, it goes on where it stopped.
  bool now();
  /// Carries the rest, waiting as need be.
  io::Awaitable<void> rest();
  const Carried& result() const noexcept { return result_; }

 private:
  enum class Stage { piece_wanted, piece_ready, sending, over };

  /// The piece has been sent (or failed, `ec`); true when the body is over.
  bool piece_sent(const beast::error_code& ec) noexcept;
  /// A piece came from the source.
  void piece_came() {
    stage_ = Stage::piece_ready;
    if (observer_ != nullptr) {
      observer_->seen(piece_);
    }
  }
  void fail(const beast::error_code& ec, bool source) noexcept;

  BodySource& source_;
  BodySink& sink_;
  BodyObserver* observer_;
  BodyPiece piece_;
  Stage stage_ = Stage::piece_wanted;
  Carried result_;
};

// Inline: on the hot path, with the source and sink of known types, the compiler may see
// through the calls.
inline bool BodyCarry::now() {
  for (;;) {
    switch (stage_) {
      case Stage::piece_wanted: {
        beast::error_code ec;
        if (!source_.next_now(piece_, ec)) {
          return false;
        }
        if (ec) {
          fail(ec, true);
          return true;
        }
        piece_came();
        break;
      }
      case Stage::piece_ready: {
        beast::error_code ec;
        if (!sink_.send_now(piece_, ec)) {
          stage_ = Stage::sending;
          return false;
        }
        if (piece_sent(ec)) {
          return true;
        }
        break;
      }
      case Stage::sending: {
        beast::error_code ec;
        if (!sink_.sent_now(ec)) {
          return false;
        }
        if (piece_sent(ec)) {
          return true;
        }
        break;
      }
      case Stage::over:
        return true;
    }
  }
}

inline bool BodyCarry::piece_sent(const beast::error_code& ec) noexcept {
  source_.taken(piece_.bytes.size());
  if (ec) {
    fail(ec, false);
    return true;
  }
  result_.started = true;
  stage_ = piece_.last ? Stage::over : Stage::piece_wanted;
  return piece_.last;
}

inline void BodyCarry::fail(const beast::error_code& ec, bool source) noexcept {
  result_.error = ec;
  result_.source_failed = source;
  stage_ = Stage::over;
}

}  // namespace sluice::http
