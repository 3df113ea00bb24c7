#pragma once

#include <algorithm>
#include <array>
#include <memory>
#include <optional>
#include <span>
#include <string_view>

#include "proxy/http/beast_http.hpp"
#include "proxy/http/body.hpp"
#include "proxy/http/header_text.hpp"
#include "proxy/http/message_parser.hpp"
#include "proxy/http/message_read.hpp"
#include "proxy/http/relay_heads.hpp"
#include "proxy/io/socket_io.hpp"
#include "proxy/io/spare_pool.hpp"
#include "proxy/io/stream.hpp"

namespace sluice::http {

/// The body of an HTTP/1.1 message (a client's request, an upstream's response) as its parser
/// reads it from the connection, past the head, into a chunk the relay lends it: each piece is
/// what one read gave, passed on at once (a streamed body is not held back). Each read has its
/// own deadline, so a large body may take as long as it keeps moving.
template <bool isRequest>
class MessageBodySource final : public BodySource {
 public:
  MessageBodySource(io::Stream& stream, beast::flat_buffer& buffer,
                    MessageParser<isRequest>& parser, std::span<char> chunk,
                    limiter::Duration timeout) noexcept
      : stream_(stream), buffer_(buffer), parser_(parser), chunk_(chunk), timeout_(timeout) {}

  bool next_now(BodyPiece& piece, beast::error_code& ec) override;
  io::Awaitable<beast::error_code> next(BodyPiece& piece) override;

 private:
  /// The piece the parser put in the chunk; a full chunk (need_buffer) is no error.
  void take(BodyPiece& piece, beast::error_code& ec) noexcept;

  io::Stream& stream_;
  beast::flat_buffer& buffer_;
  MessageParser<isRequest>& parser_;
  std::span<char> chunk_;
  limiter::Duration timeout_;
  std::optional<MessageRead<isRequest>> read_;
};

// Compiled once, in http1_body.cpp (a coroutine's frame is best defined in one place).
extern template class MessageBodySource<true>;
extern template class MessageBodySource<false>;

/// A body written to an HTTP/1.1 connection (an upstream's, a client's): after `head` (with the
/// first piece, in the same write), as it is or, when `chunked`, each piece in its chunk framing
/// and the last chunk (with the trailers, if any) after the last. Each write has its own
/// deadline.
class SocketBodySink final : public BodySink {
 public:
  SocketBodySink(io::Stream& stream, const HeadText* head, bool chunked,
                 limiter::Duration timeout) noexcept
      : stream_(stream), head_(head), chunked_(chunked), timeout_(timeout) {}

  bool send_now(const BodyPiece& piece, beast::error_code& ec) override;
  io::Awaitable<beast::error_code> send_rest() override;

 private:
  io::SendBuffers pieces() const noexcept { return {pieces_.data(), count_}; }

  io::Stream& stream_;
  const HeadText* head_;  ///< Until it is sent.
  bool chunked_;
  limiter::Duration timeout_;
  std::array<net::const_buffer, 5> pieces_{};  // head, size line, bytes, CRLF, last chunk
  std::size_t count_ = 0;
  ChunkSizeLine size_line_{};
  std::unique_ptr<HeadText> last_chunk_;  ///< With trailers (seldom: gRPC to HTTP/1.1).
  io::SendStart start_;
};

/// Tells an HTTP/1.1 client that waits for it (`Expect: 100-continue`) to send its body: 100
/// (Continue), within `timeout`.
io::Awaitable<beast::error_code> send_continue(io::Stream& client, limiter::Duration timeout);

}  // namespace sluice::http
