#include "proxy/http/message_read.hpp"

#include <gtest/gtest.h>

#include <array>
#include <boost/asio/detached.hpp>
#include <boost/asio/write.hpp>
#include <chrono>
#include <string>

#include "proxy/http/beast_http.hpp"
#include "proxy/http/message_parser.hpp"
#include "tests/support/event_loop.hpp"

namespace sluice::http {
namespace {

using namespace std::chrono_literals;

/// A connected pair of sockets on loopback: `ours` reads what `peer` writes.
struct SocketPair {
  explicit SocketPair(net::io_context& io) : peer(io) {
    io::Acceptor acceptor(io, tcp::endpoint(net::ip::make_address("127.0.0.1"), 0));
    peer.connect(acceptor.local_endpoint());
    peer.set_option(tcp::no_delay(true));
    ours.emplace(acceptor.accept());
  }
  io::Socket peer;
  std::optional<io::Socket> ours;
};

/// Reads with MessageRead as the proxy does, counting the reads that reached the socket.
template <bool isRequest>
io::Awaitable<beast::error_code> read_message(io::Socket& socket, beast::flat_buffer& buffer,
                                              MessageParser<isRequest>& parser,
                                              typename MessageRead<isRequest>::Until until,
                                              int& socket_reads) {
  beast::error_code ec;
  for (MessageRead read(buffer, parser, until); read.wants_bytes(ec);) {
    ++socket_reads;
    auto [error, n] = co_await socket.async_read_some(read.room(), io::use_nothrow);
    read.received(n, error, ec);
  }
  co_return ec;
}

io::Awaitable<void> write_later(io::Socket& socket, std::chrono::milliseconds delay,
                                std::string text) {
  io::Timer timer(co_await net::this_coro::executor, delay);
  co_await timer.async_wait(io::use_nothrow);
  co_await net::async_write(socket, net::buffer(text), io::use_nothrow);
}

class MessageReadOnLoopback : public ::testing::Test {
 protected:
  test::EventLoop loop;
  SocketPair sockets{loop.io()};
  beast::flat_buffer buffer;
  HeadFields head;
  int socket_reads = 0;
};

constexpr auto kHead = MessageRead<true>::Until::header_done;

TEST_F(MessageReadOnLoopback, AHeadInTwoPiecesIsReadWholeAndTheNextRequestNeedsNoRead) {
  loop.run([&]() -> io::Awaitable<void> {
    net::co_spawn(loop.io(), write_later(sockets.peer, 0ms, "GET /a HTTP/1.1\r\nHo"),
                  net::detached);
    net::co_spawn(
        loop.io(),
        write_later(sockets.peer, 20ms, "st: x\r\n\r\nGET /b HTTP/1.1\r\nHost: y\r\n\r\n"),
        net::detached);
    RequestParser first(head);
    EXPECT_FALSE(co_await read_message(*sockets.ours, buffer, first, kHead, socket_reads));
    EXPECT_TRUE(first.is_done());
    EXPECT_EQ(first.target(), "/a");
    EXPECT_EQ(head.value_of(http::field::host), "x");
    EXPECT_GE(socket_reads, 2);

    // The pipelined request came with the first one's end: parsed from the buffer at once.
    const int reads_before = socket_reads;
    RequestParser second(head);
    EXPECT_FALSE(co_await read_message(*sockets.ours, buffer, second, kHead, socket_reads));
    EXPECT_EQ(socket_reads, reads_before);
    EXPECT_EQ(second.target(), "/b");
    EXPECT_EQ(buffer.size(), 0u);
  });
}

TEST_F(MessageReadOnLoopback, EmptyLinesBeforeARequestAreSkippedEvenWhenSplit) {
  loop.run([&]() -> io::Awaitable<void> {
    co_await net::async_write(sockets.peer, net::buffer(std::string("\r\n\r\n\r")),
                              io::use_nothrow);
    RequestParser parser(head);
    beast::error_code ec;
    MessageRead read(buffer, parser, kHead);
    EXPECT_TRUE(read.wants_bytes(ec));
    auto [error, n] = co_await sockets.ours->async_read_some(read.room(), io::use_nothrow);
    read.received(n, error, ec);
    // The empty lines are gone; a CR alone may start one more, or be a bad request line.
    EXPECT_TRUE(read.wants_bytes(ec));
    EXPECT_EQ(buffer.size(), 1u);
    co_await net::async_write(sockets.peer,
                              net::buffer(std::string("\nGET /a HTTP/1.1\r\nHost: x\r\n\r\n")),
                              io::use_nothrow);
    do {
      auto [more_error, more] =
          co_await sockets.ours->async_read_some(read.room(), io::use_nothrow);
      read.received(more, more_error, ec);
    } while (read.wants_bytes(ec));
    EXPECT_FALSE(ec);
    EXPECT_EQ(parser.target(), "/a");
    // Not before a response.
    HeadFields response_head;
    ResponseParser response(response_head);
    beast::flat_buffer response_buffer;
    co_await net::async_write(sockets.peer, net::buffer(std::string("\r\nHTTP/1.1 200 OK\r\n\r\n")),
                              io::use_nothrow);
    EXPECT_TRUE(co_await read_message(*sockets.ours, response_buffer, response,
                                      MessageRead<false>::Until::header_done, socket_reads));
  });
}

TEST_F(MessageReadOnLoopback, EndOfStreamBeforeAnyByteIsEndOfStreamAndInAHeadIsPartial) {
  loop.run([&]() -> io::Awaitable<void> {
    sockets.peer.shutdown(io::Socket::shutdown_send);
    RequestParser parser(head);
    EXPECT_EQ(co_await read_message(*sockets.ours, buffer, parser, kHead, socket_reads),
              http::error::end_of_stream);
  });
  SocketPair other(loop.io());
  loop.run([&]() -> io::Awaitable<void> {
    co_await net::async_write(other.peer, net::buffer(std::string("GET / HTTP/1.1\r\nHo")),
                              io::use_nothrow);
    other.peer.shutdown(io::Socket::shutdown_send);
    RequestParser parser(head);
    beast::flat_buffer fresh;
    EXPECT_EQ(co_await read_message(*other.ours, fresh, parser, kHead, socket_reads),
              http::error::partial_message);
  });
}

TEST_F(MessageReadOnLoopback, ABodyThatRunsToTheEndOfStreamIsDoneThere) {
  loop.run([&]() -> io::Awaitable<void> {
    co_await net::async_write(sockets.peer,
                              net::buffer(std::string("HTTP/1.1 200 OK\r\n\r\nsome body")),
                              io::use_nothrow);
    sockets.peer.shutdown(io::Socket::shutdown_send);
    ResponseParser parser(head);
    EXPECT_FALSE(co_await read_message(*sockets.ours, buffer, parser,
                                       MessageRead<false>::Until::header_done, socket_reads));
    std::array<char, 64> room{};
    std::string body;
    while (!parser.is_done()) {
      parser.body_into(room);
      const beast::error_code ec = co_await read_message(
          *sockets.ours, buffer, parser, MessageRead<false>::Until::progress, socket_reads);
      EXPECT_TRUE(!ec || ec == http::error::need_buffer) << ec.message();
      if (ec && ec != http::error::need_buffer) {
        break;
      }
      body.append(room.data(), room.size() - parser.room_left());
    }
    EXPECT_EQ(body, "some body");
    EXPECT_TRUE(parser.is_done());
  });
}

TEST_F(MessageReadOnLoopback, AHeadLargerThanTheBufferIsABufferOverflow) {
  loop.run([&]() -> io::Awaitable<void> {
    co_await net::async_write(
        sockets.peer,
        net::buffer("GET / HTTP/1.1\r\nX-Long: " + std::string(200, 'x') + "\r\n\r\n"),
        io::use_nothrow);
    beast::flat_buffer small(64);
    RequestParser parser(head);
    EXPECT_EQ(co_await read_message(*sockets.ours, small, parser, kHead, socket_reads),
              http::error::buffer_overflow);
  });
}

}  // namespace
}  // namespace sluice::http
