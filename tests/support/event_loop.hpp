#pragma once

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <exception>

namespace sluice::test {

/// One event loop for a test, run on the test's thread one coroutine at a time: what runs on it
/// (connections, their background reads) stays on it from one run() to the next.
class EventLoop {
 public:
  /// Runs `body()` (an awaitable) on the loop until it finishes; rethrows its exception.
  template <class Body>
  void run(Body body) {
    bool done = false;
    std::exception_ptr failure;
    boost::asio::co_spawn(io_, body(), [&](std::exception_ptr error) {
      failure = error;
      done = true;
    });
    while (!done) {
      if (io_.run_one() == 0) {
        io_.restart();  // it ran out of work once: it stopped, and must be told to go on
      }
    }
    if (failure) {
      std::rethrow_exception(failure);
    }
  }

  /// Runs what is ready now (background work such as a release).
  void poll() {
    io_.restart();
    io_.poll();
  }

  /// Runs background work (reconnections, timers) for `duration`.
  template <class Duration>
  void run_for(Duration duration) {
    io_.restart();
    io_.run_for(duration);
  }

  boost::asio::io_context& io() { return io_; }

 private:
  boost::asio::io_context io_;
};

}  // namespace sluice::test
