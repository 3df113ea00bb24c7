#include "proxy/http/h2/stream_body.hpp"

#include "proxy/http/h2/stream_answers.hpp"

namespace sluice::http::h2 {

bool StreamBodySource::next_now(BodyPiece& piece, beast::error_code& ec) {
  if (stream_.closed) {
    ec = net::error::connection_aborted;  // reset by the client, or its connection went
    return true;
  }
  if (stream_.body.empty() && !stream_.body_done) {
    return false;
  }
  piece_.clear();
  piece_.swap(stream_.body);
  piece = BodyPiece{.bytes = piece_, .last = stream_.body_done && stream_.body.empty()};
  return true;
}

io::Awaitable<beast::error_code> StreamBodySource::next(BodyPiece& piece) {
  if (!co_await await_body(stream_, timeout_)) {
    co_return beast::error::timeout;
  }
  beast::error_code ec;
  next_now(piece, ec);  // a piece, the end, or the stream closed: next_now has one now
  co_return ec;
}

void StreamBodySource::taken(std::size_t count) noexcept {
  if (count > 0) {
    // Passed on, or never will be: the window gets them back either way, else it would shrink
    // for good.
    connection_.session().consume(stream_, count);
    connection_.flush();
  }
}

bool StreamBodySink::send_now(const BodyPiece& piece, beast::error_code& ec) {
  if (stream_.closed) {
    ec = net::error::connection_aborted;
    return true;
  }
  if (piece.bytes.empty() && !piece.last) {
    return true;
  }
  stream_.out = piece.bytes;
  stream_.out_done = piece.last;
  if (piece.last && piece.trailers != nullptr) {
    trailers_ = std::make_unique<FieldList>();
    FieldListOut out(*trailers_);
    piece.trailers->write(out);
    stream_.trailers = &trailers_->list();
  }
  connection_.session().resume(stream_);
  connection_.flush();
  return sent_now(ec);
}

bool StreamBodySink::sent_now(beast::error_code& ec) {
  return lent_bytes_taken(stream_.out, stream_.closed, ec, net::error::connection_aborted);
}

io::Awaitable<beast::error_code> StreamBodySink::send_rest() {
  beast::error_code ec;
  while (!sent_now(ec)) {
    if (!co_await stream_.changed.wait_for(timeout_)) {
      connection_.session().reset(stream_, NGHTTP2_CANCEL);  // the client stopped reading it
      connection_.flush();
      co_return beast::error::timeout;
    }
  }
  co_return ec;
}

}  // namespace sluice::http::h2
