#include "proxy/http/http1_body.hpp"

namespace sluice::http {

template <bool isRequest>
bool MessageBodySource<isRequest>::next_now(BodyPiece& piece, beast::error_code& ec) {
  if (parser_.is_done()) {
    piece = BodyPiece{.bytes = {}, .last = true};
    return true;
  }
  // Beast reads no more than the buffer's free capacity (at least 512 bytes): without room, a
  // body would move 512 bytes per system call.
  if (buffer_.capacity() < io::kChunkBytes) {
    buffer_.reserve(std::min(io::kChunkBytes, buffer_.max_size()));
  }
  parser_.body_into(chunk_);
  // The usual body, of known length, all there and within the chunk: parsed in one go.
  if (const auto length = parser_.content_length_remaining();
      length && !parser_.chunked() && *length <= buffer_.size() && *length <= chunk_.size()) {
    buffer_.consume(parser_.put(buffer_.data(), ec));
    take(piece, ec);
    return true;
  }
  // A piece that came in with what was read before is parsed without waiting.
  read_.emplace(buffer_, parser_, MessageRead<isRequest>::Until::progress);
  if (read_->wants_bytes(ec)) {
    return false;
  }
  take(piece, ec);
  return true;
}

template <bool isRequest>
io::Awaitable<beast::error_code> MessageBodySource<isRequest>::next(BodyPiece& piece) {
  beast::error_code ec;
  stream_.expires_after(timeout_);
  do {
    auto [error, n] = co_await stream_.async_read_some(read_->room(), io::use_nothrow);
    read_->received(n, error, ec);
  } while (read_->wants_bytes(ec));
  take(piece, ec);
  co_return ec;
}

template <bool isRequest>
void MessageBodySource<isRequest>::take(BodyPiece& piece, beast::error_code& ec) noexcept {
  if (ec == http::error::need_buffer) {
    ec = {};
  }
  piece =
      BodyPiece{.bytes = std::span<const char>(chunk_.data(), chunk_.size() - parser_.room_left()),
                .last = parser_.is_done()};
}

template class MessageBodySource<true>;
template class MessageBodySource<false>;

bool SocketBodySink::send_now(const BodyPiece& piece, beast::error_code& ec) {
  static constexpr std::string_view kLastChunk = "0\r\n\r\n";
  count_ = 0;
  if (head_ != nullptr) {
    pieces_[count_++] = net::buffer(head_->data(), head_->size());
  }
  count_ = add_body_piece(pieces_, count_, std::string_view(piece.bytes.data(), piece.bytes.size()),
                          chunked_, size_line_);
  if (piece.last && chunked_) {
    if (piece.trailers != nullptr) {
      last_chunk_ = std::make_unique<HeadText>();
      append(*last_chunk_, "0\r\n");
      HeadTextOut fields(*last_chunk_);
      piece.trailers->write(fields);
      fields.end();
      pieces_[count_++] = net::buffer(last_chunk_->data(), last_chunk_->size());
    } else {
      pieces_[count_++] = net::buffer(kLastChunk);
    }
  }
  if (count_ == 0) {
    return true;
  }
  start_ = io::send_now(stream_, pieces());
  ec = start_.error;
  if (start_.finished) {
    head_ = nullptr;
  }
  return start_.finished;
}

io::Awaitable<beast::error_code> SocketBodySink::send_rest() {
  const beast::error_code ec = co_await io::send_rest(stream_, pieces(), start_.sent, timeout_);
  head_ = nullptr;
  co_return ec;
}

io::Awaitable<beast::error_code> send_continue(io::Stream& client, limiter::Duration timeout) {
  static constexpr std::string_view kContinue = "HTTP/1.1 100 Continue\r\n\r\n";
  const std::array<net::const_buffer, 1> interim{net::buffer(kContinue)};
  co_return co_await io::send(client, interim, timeout);
}

}  // namespace sluice::http
