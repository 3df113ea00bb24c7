#include "proxy/io/stream.hpp"

#include <gtest/gtest.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/write.hpp>
#include <chrono>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "tests/support/event_loop.hpp"

namespace sluice::io {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

/// A connected pair on loopback: `stream` (the one under test) and its `peer`.
struct Connection {
  explicit Connection(net::io_context& io) : peer(io) {
    Acceptor acceptor(io, tcp::endpoint(net::ip::make_address("127.0.0.1"), 0));
    peer.connect(acceptor.local_endpoint());
    peer.set_option(tcp::no_delay(true));  // small writes go out at once, as the proxy's do
    stream = std::make_unique<Stream>(acceptor.accept());
  }
  Socket peer;
  std::unique_ptr<Stream> stream;
};

Awaitable<void> sleep_for(Clock::duration duration) {
  Timer timer(co_await net::this_coro::executor, duration);
  co_await timer.async_wait(use_nothrow);
}

/// A test's event loop and its connection.
class StreamOnLoopback : public ::testing::Test {
 protected:
  test::EventLoop loop;
  Connection connection{loop.io()};
};

/// Writes `text` to `socket` after `delay`.
Awaitable<void> write_later(Socket& socket, Clock::duration delay, std::string text) {
  co_await sleep_for(delay);
  co_await net::async_write(socket, net::buffer(text), use_nothrow);
}

/// One read on `stream`: how it ended and what it read.
Awaitable<std::pair<beast::error_code, std::string>> read_once(Stream& stream) {
  std::array<char, 16> bytes{};
  auto [ec, n] = co_await stream.async_read_some(net::buffer(bytes), use_nothrow);
  co_return std::pair{ec, std::string(bytes.data(), n)};
}

/// The peer writes `text` and the stream reads it whole: the socket is empty afterwards.
Awaitable<void> pass_through(Connection& connection, std::string text) {
  co_await net::async_write(connection.peer, net::buffer(text), use_nothrow);
  EXPECT_EQ(co_await read_once(*connection.stream), std::pair(beast::error_code{}, text));
}

TEST_F(StreamOnLoopback, AReadEndsWithATimeoutAtItsDeadline) {
  loop.run([&]() -> Awaitable<void> {
    const auto started = Clock::now();
    connection.stream->expires_after(50ms);
    const auto [ec, read] = co_await read_once(*connection.stream);
    EXPECT_EQ(ec, beast::error::timeout);
    EXPECT_GE(Clock::now() - started, 50ms);
    EXPECT_TRUE(connection.stream->timed_out());
    EXPECT_FALSE(connection.stream->socket().is_open());
  });
}

TEST_F(StreamOnLoopback, ADeadlineMovedLaterKeepsTheReadGoingPastTheFirstOne) {
  loop.run([&]() -> Awaitable<void> {
    connection.stream->expires_after(20ms);  // arms the timer for 20 ms
    connection.stream->expires_after(10s);   // later: the timer stays, and re-arms when it fires
    net::co_spawn(co_await net::this_coro::executor, write_later(connection.peer, 150ms, "late"),
                  net::detached);
    const auto [ec, read] = co_await read_once(*connection.stream);
    EXPECT_FALSE(ec) << ec.message();
    EXPECT_EQ(read, "late");
    EXPECT_FALSE(connection.stream->timed_out());
  });
}

TEST_F(StreamOnLoopback, ADeadlineMovedEarlierReArmsTheTimer) {
  loop.run([&]() -> Awaitable<void> {
    const auto started = Clock::now();
    connection.stream->expires_after(1h);
    connection.stream->expires_after(30ms);
    const auto [ec, read] = co_await read_once(*connection.stream);
    EXPECT_EQ(ec, beast::error::timeout);
    EXPECT_LT(Clock::now() - started, 10s);  // not the hour
  });
}

TEST_F(StreamOnLoopback, NoDeadlineOutlivesATimerAlreadyArmed) {
  loop.run([&]() -> Awaitable<void> {
    connection.stream->expires_after(20ms);
    connection.stream->expires_never();
    net::co_spawn(co_await net::this_coro::executor, write_later(connection.peer, 150ms, "late"),
                  net::detached);
    const auto [ec, read] = co_await read_once(*connection.stream);
    EXPECT_FALSE(ec) << ec.message();
    EXPECT_EQ(read, "late");
  });
}

TEST_F(StreamOnLoopback, AnOperationStartedAfterTheDeadlineEndsAtOnce) {
  loop.run([&]() -> Awaitable<void> {
    connection.stream->expires_after(10ms);
    co_await sleep_for(60ms);  // the deadline passes with nothing in progress
    std::array<char, 16> bytes{};
    auto [read_error, read] =
        co_await connection.stream->async_read_some(net::buffer(bytes), use_nothrow);
    EXPECT_EQ(read_error, beast::error::timeout);
    auto [write_error, written] =
        co_await connection.stream->async_write_some(net::buffer(bytes), use_nothrow);
    EXPECT_EQ(write_error, beast::error::timeout);
    // A new deadline starts afresh (on a closed socket here, so the read fails otherwise).
    connection.stream->expires_after(1s);
    EXPECT_FALSE(connection.stream->timed_out());
  });
}

TEST_F(StreamOnLoopback, AWriteThePeerNeverTakesEndsWithATimeout) {
  loop.run([&]() -> Awaitable<void> {
    connection.stream->expires_after(100ms);
    const std::vector<char> lots(64 * 1024 * 1024, 'x');  // more than both socket buffers hold
    auto [ec, n] = co_await net::async_write(*connection.stream, net::buffer(lots), use_nothrow);
    EXPECT_EQ(ec, beast::error::timeout);
    EXPECT_LT(n, lots.size());
  });
}

TEST(Stream, AStreamGoneBeforeItsTimerFiresLeavesNothingBehind) {
  test::EventLoop loop;
  {
    Connection connection(loop.io());
    connection.stream->expires_after(1h);
  }
  // The deadline's handler still runs, aborted, after the stream is gone (ASan watches what it
  // touches). Then nothing is left: no timer waits out the hour, so the loop runs out of work
  // and stops long before the second is up.
  loop.io().restart();
  const std::size_t handlers = loop.io().run_for(1s);
  EXPECT_TRUE(loop.io().stopped());
  EXPECT_GE(handlers, 1U);
}

TEST_F(StreamOnLoopback, ReadsAndWritesPassThrough) {
  loop.run([&]() -> Awaitable<void> {
    connection.stream->expires_after(5s);
    auto [write_error, written] = co_await net::async_write(
        *connection.stream, net::buffer(std::string("ping")), use_nothrow);
    EXPECT_FALSE(write_error);
    std::array<char, 4> received{};
    connection.peer.read_some(net::buffer(received));
    EXPECT_EQ(std::string(received.data(), received.size()), "ping");
    co_await net::async_write(connection.peer, net::buffer(std::string("pong")), use_nothrow);
    const auto [ec, read] = co_await read_once(*connection.stream);
    EXPECT_FALSE(ec);
    EXPECT_EQ(read, "pong");
  });
}

// Reads that empty the socket make the next one wait for epoll instead of trying a recv first
// (drain_aware_read.hpp). None of these may lose data or hang, whenever the data comes.

TEST_F(StreamOnLoopback, DataArrivingAfterAReadEmptiedTheSocketIsStillRead) {
  loop.run([&]() -> Awaitable<void> {
    connection.stream->expires_after(5s);
    co_await pass_through(connection, "ab");
    // The next read waits in the loop; the peer writes only once it does.
    net::co_spawn(co_await net::this_coro::executor, write_later(connection.peer, 0ms, "cd"),
                  net::detached);
    EXPECT_EQ(co_await read_once(*connection.stream),
              std::pair(beast::error_code{}, std::string("cd")));
  });
}

TEST_F(StreamOnLoopback, DataArrivingBetweenTwoReadsIsReadByTheSecond) {
  loop.run([&]() -> Awaitable<void> {
    connection.stream->expires_after(5s);
    co_await pass_through(connection, "ab");
    // Written before the next read starts: its epoll event is what wakes that read.
    net::write(connection.peer, net::buffer(std::string("cd")));
    EXPECT_EQ(co_await read_once(*connection.stream),
              std::pair(beast::error_code{}, std::string("cd")));
  });
}

TEST_F(StreamOnLoopback, AReadThatFillsItsBufferLeavesTheRestForTheNext) {
  loop.run([&]() -> Awaitable<void> {
    connection.stream->expires_after(5s);
    const std::string text = "0123456789abcdefXYZ";  // 19 bytes; read_once reads up to 16
    co_await net::async_write(connection.peer, net::buffer(text), use_nothrow);
    EXPECT_EQ((co_await read_once(*connection.stream)).second, text.substr(0, 16));
    EXPECT_EQ((co_await read_once(*connection.stream)).second, "XYZ");
  });
}

TEST_F(StreamOnLoopback, TheEndOfStreamFollowsTheLastBytes) {
  loop.run([&]() -> Awaitable<void> {
    connection.stream->expires_after(5s);
    co_await pass_through(connection, "ab");
    connection.peer.shutdown(Socket::shutdown_send);
    EXPECT_EQ((co_await read_once(*connection.stream)).first, net::error::eof);
  });
}

TEST_F(StreamOnLoopback, AWaitingReadEndsWhenItsSocketCloses) {
  loop.run([&]() -> Awaitable<void> {
    connection.stream->expires_after(5s);
    co_await pass_through(connection, "ab");  // empties the socket
    net::post(co_await net::this_coro::executor, [&] { connection.stream->socket().close(); });
    EXPECT_EQ((co_await read_once(*connection.stream)).first, net::error::operation_aborted);
  });
}

TEST_F(StreamOnLoopback, ManyExchangesOfEverySizeArriveWhole) {
  loop.run([&]() -> Awaitable<void> {
    connection.stream->expires_after(30s);
    for (std::size_t size = 1; size <= 2000; size += 7) {
      const std::string sent(size, static_cast<char>('a' + size % 26));
      // Half written before the reads start, half while they wait.
      net::write(connection.peer, net::buffer(sent.data(), size / 2));
      net::co_spawn(co_await net::this_coro::executor,
                    write_later(connection.peer, 0ms, sent.substr(size / 2)), net::detached);
      std::string received;
      while (received.size() < size) {
        auto [ec, bytes] = co_await read_once(*connection.stream);
        if (ec) {
          ADD_FAILURE() << ec.message() << " after " << received.size() << " of " << size;
          co_return;
        }
        received += bytes;
      }
      EXPECT_EQ(received, sent);
    }
  });
}

}  // namespace
}  // namespace sluice::io
