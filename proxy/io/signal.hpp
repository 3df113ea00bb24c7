#pragma once

#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <utility>

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
  Awaitable<bool> wait_for(Duration timeout);
  /// Until notified.
  Awaitable<void> wait();

 private:
  /// Whether a notification came, forgetting it.
  bool consume() noexcept { return std::exchange(notified_, false); }

  Timer timer_;
  bool notified_ = false;
};

}  // namespace sluice::io
