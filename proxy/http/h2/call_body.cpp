#include "proxy/http/h2/call_body.hpp"

#include "proxy/http/relay_heads.hpp"

namespace sluice::http::h2 {

void CallTrailers::write(HeadOut& out) const {
  for (const nghttp2_nv& field : call_.trailers.list()) {
    out.field(text_of(field.name, field.namelen), text_of(field.value, field.valuelen));
  }
}

bool CallBodySource::next_now(BodyPiece& piece, beast::error_code& ec) {
  if (!call_.body.empty() || call_.body_done) {
    piece_.clear();
    piece_.swap(call_.body);
    const bool last = call_.body_done && call_.body.empty();
    piece = BodyPiece{.bytes = piece_,
                      .last = last,
                      .trailers = last && !call_.trailers.list().empty() ? &trailers_ : nullptr};
    return true;
  }
  if (call_.closed) {
    ec = net::error::connection_reset;  // reset by the upstream mid-body, or its connection went
    return true;
  }
  return false;
}

io::Awaitable<beast::error_code> CallBodySource::next(BodyPiece& piece) {
  while (call_.body.empty() && !call_.body_done && !call_.closed) {
    if (!co_await call_.changed->wait_for(timeout_)) {
      co_return beast::error::timeout;
    }
  }
  beast::error_code ec;
  next_now(piece, ec);
  co_return ec;
}

bool CallBodySink::send_now(const BodyPiece& piece, beast::error_code& ec) {
  if (call_.closed) {
    ec = net::error::connection_reset;
    return true;
  }
  call_.out = piece.bytes;
  call_.out_done = piece.last;
  session_.resume(call_);
  return sent_now(ec);
}

bool CallBodySink::sent_now(beast::error_code& ec) {
  return lent_bytes_taken(call_.out, call_.closed, ec, net::error::connection_reset);
}

io::Awaitable<beast::error_code> CallBodySink::send_rest() {
  beast::error_code ec;
  while (!sent_now(ec)) {
    if (!co_await call_.changed->wait_for(timeout_)) {
      co_return beast::error::timeout;
    }
  }
  co_return ec;
}

}  // namespace sluice::http::h2
