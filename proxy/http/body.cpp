#include "proxy/http/body.hpp"

namespace sluice::http {

bool BodyCarry::now() {
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
        stage_ = Stage::piece_ready;
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

io::Awaitable<void> BodyCarry::rest() {
  while (!now()) {
    // now() stopped waiting for a piece, or for a send to finish.
    if (stage_ == Stage::piece_wanted) {
      const beast::error_code ec = co_await source_.next(piece_);
      if (ec) {
        fail(ec, true);
        co_return;
      }
      stage_ = Stage::piece_ready;
    } else {  // sending
      const beast::error_code ec = co_await sink_.send_rest();
      if (piece_sent(ec)) {
        co_return;
      }
    }
  }
}

bool BodyCarry::piece_sent(const beast::error_code& ec) noexcept {
  source_.taken(piece_.bytes.size());
  if (ec) {
    fail(ec, false);
    return true;
  }
  result_.started = true;
  stage_ = piece_.last ? Stage::over : Stage::piece_wanted;
  return piece_.last;
}

void BodyCarry::fail(const beast::error_code& ec, bool source) noexcept {
  result_.error = ec;
  result_.source_failed = source;
  stage_ = Stage::over;
}

io::Awaitable<Carried> carry(BodySource& source, BodySink& sink) {
  BodyCarry body(source, sink);
  if (!body.now()) {
    co_await body.rest();
  }
  co_return body.result();
}

}  // namespace sluice::http
