#include "proxy/http/http1_body.hpp"

namespace sluice::http {

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

}  // namespace sluice::http
