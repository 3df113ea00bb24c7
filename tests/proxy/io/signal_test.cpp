// io::Signal on a real io_context: a notification is never lost between a check and the wait
// after it, a wait ends when notified or when its time is up, and one notification is taken once.
#include "proxy/io/signal.hpp"

#include <gtest/gtest.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <chrono>
#include <optional>

namespace sluice::io {
namespace {

using namespace std::chrono_literals;

/// Runs `coroutine` on a fresh io_context to its end; what it returned.
template <class T>
T run(net::io_context& io, Awaitable<T> coroutine) {
  std::optional<T> result;
  net::co_spawn(io, std::move(coroutine), [&](std::exception_ptr error, T value) {
    if (error) {
      std::rethrow_exception(error);
    }
    result = value;
  });
  io.run();
  io.restart();
  return *result;
}

TEST(Signal, ANotificationBeforeTheWaitIsKeptForIt) {
  net::io_context io;
  Signal signal(io.get_executor());
  signal.notify();
  const auto started = std::chrono::steady_clock::now();
  EXPECT_TRUE(run(io, signal.wait_for(10s)));
  EXPECT_LT(std::chrono::steady_clock::now() - started, 1s) << "it did not wait";
  EXPECT_FALSE(run(io, signal.wait_for(20ms))) << "a notification is taken once";
}

TEST(Signal, AWaitEndsWhenNotifiedOrWhenItsTimeIsUp) {
  net::io_context io;
  Signal signal(io.get_executor());
  Timer later(io.get_executor(), 30ms);
  later.async_wait([&](const beast::error_code&) { signal.notify(); });
  const auto started = std::chrono::steady_clock::now();
  EXPECT_TRUE(run(io, signal.wait_for(10s)));
  const auto waited = std::chrono::steady_clock::now() - started;
  EXPECT_GE(waited, 30ms);
  EXPECT_LT(waited, 5s);
  EXPECT_FALSE(run(io, signal.wait_for(20ms)));
}

TEST(Signal, AnUnboundedWaitEndsWhenNotified) {
  net::io_context io;
  Signal signal(io.get_executor());
  bool woken = false;
  net::co_spawn(
      io,
      [&]() -> Awaitable<void> {
        co_await signal.wait();
        woken = true;
      },
      net::detached);
  io.poll();
  EXPECT_FALSE(woken);
  signal.notify();
  io.run();
  EXPECT_TRUE(woken);
}

}  // namespace
}  // namespace sluice::io
