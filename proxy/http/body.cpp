#include "proxy/http/body.hpp"

namespace sluice::http {

io::Awaitable<void> BodyCarry::rest() {
  while (!now()) {
    // now() stopped waiting for a piece, or for a send to finish.
    if (stage_ == Stage::piece_wanted) {
      const beast::error_code ec = co_await source_.next(piece_);
      if (ec) {
        fail(ec, true);
        co_return;
      }
      piece_came();
    } else {  // sending
      const beast::error_code ec = co_await sink_.send_rest();
      if (piece_sent(ec)) {
        co_return;
      }
    }
  }
}

}  // namespace sluice::http
