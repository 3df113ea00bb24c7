#pragma once

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <chrono>
#include <utility>

#include "limiter/clock.hpp"
#include "proxy/io/net.hpp"

namespace sluice::io {

/// Wakes one coroutine of a loop from another's code on the same loop: "something changed, look
/// again". A notification that comes while nobody waits is kept for the next wait, so none is
/// lost between a check and the wait that follows it. Not thread-safe: one loop's thread only.
class Signal {
 public:
  explicit Signal(const Executor& executor) : timer_(executor) {}

  void notify() {
    notified_ = true;
    timer_.cancel();
  }

  /// Until notified (true), or `timeout` has passed (false).
  Awaitable<bool> wait_for(limiter::Duration timeout) {
    if (consume()) {
      co_return true;
    }
    timer_.expires_after(timeout);
    co_await timer_.async_wait(use_nothrow);
    co_return consume();
  }

  /// Until notified.
  Awaitable<void> wait() {
    while (!consume()) {
      timer_.expires_at(std::chrono::steady_clock::time_point::max());
      co_await timer_.async_wait(use_nothrow);
    }
  }

 private:
  /// Whether a notification came, forgetting it.
  bool consume() noexcept { return std::exchange(notified_, false); }

  Timer timer_;
  bool notified_ = false;
};

}  // namespace sluice::io
