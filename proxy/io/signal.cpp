#include "proxy/io/signal.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/use_awaitable.hpp>

namespace sluice::io {

// The coroutines live here, not inline in the header: a coroutine's frame is a type of its own,
// and link-time optimization takes the frames of an inline one made in several files for a
// one-definition-rule violation.

Awaitable<bool> Signal::wait_for(Duration timeout) {
  if (consume()) {
    co_return true;
  }
  timer_.expires_after(timeout);
  co_await timer_.async_wait(use_nothrow);
  co_return consume();
}

Awaitable<void> Signal::wait() {
  while (!consume()) {
    timer_.expires_at(std::chrono::steady_clock::time_point::max());
    co_await timer_.async_wait(use_nothrow);
  }
}

}  // namespace sluice::io
