// An HTTP/1.1 body carried between real loopback connections: read by its parser past the head
// (MessageBodySource), written as it is or chunked anew after the head (SocketBodySink): exact
// bytes on the wire.
#include "proxy/http/http1_body.hpp"

#include <gtest/gtest.h>

#include <boost/asio/read.hpp>
#include <boost/asio/write.hpp>
#include <chrono>
#include <memory>
#include <string>

#include "tests/support/event_loop.hpp"

namespace sluice::http {
namespace {

using namespace std::chrono_literals;

/// A connected pair on loopback: `stream` (the proxy's side) and its `peer`.
struct BodyLoopback {
  explicit BodyLoopback(net::io_context& io) : peer(io) {
    io::Acceptor acceptor(io, net::ip::tcp::endpoint(net::ip::make_address("127.0.0.1"), 0));
    peer.connect(acceptor.local_endpoint());
    peer.set_option(net::ip::tcp::no_delay(true));
    stream = std::make_unique<io::Stream>(acceptor.accept());
  }
  io::Socket peer;
  std::unique_ptr<io::Stream> stream;
};

/// Everything the peer of `to` receives until the proxy's side closes it.
io::Awaitable<std::string> all_received(BodyLoopback& to) {
  to.stream->socket().close();
  std::string text;
  std::array<char, 4096> bytes{};
  for (;;) {
    auto [ec, n] = co_await to.peer.async_read_some(net::buffer(bytes), io::use_nothrow);
    text.append(bytes.data(), n);
    if (ec) {
      co_return text;
    }
  }
}

/// Carries the whole body, as a relay does.
io::Awaitable<Carried> carry_whole(BodySource& source, BodySink& sink) {
  BodyCarry body(source, sink);
  if (!body.now()) {
    co_await body.rest();
  }
  co_return body.result();
}

constexpr std::string_view kResponseHead = "HTTP/1.1 200 OK\r\ncontent-type: text/plain\r\n\r\n";

/// A response read from `from` (the upstream's side) up to its body, carried to `to`.
class CarryResponse : public testing::Test {
 protected:
  test::EventLoop loop;
  BodyLoopback from{loop.io()};
  BodyLoopback to{loop.io()};
  beast::flat_buffer buffer{kMaxHeaderBytes};
  HeadFields fields;
  ResponseParser parser{fields};
  io::BodyChunk chunk{};
  HeadText head;

  CarryResponse() { append(head, kResponseHead); }

  /// Reads the response head the upstream sent.
  io::Awaitable<void> read_head() {
    beast::error_code ec;
    MessageRead read(buffer, parser, MessageRead<false>::Until::header_done);
    while (read.wants_bytes(ec)) {
      auto [error, n] = co_await from.stream->async_read_some(read.room(), io::use_nothrow);
      read.received(n, error, ec);
    }
    EXPECT_FALSE(ec) << ec.message();
  }

  io::Awaitable<Carried> carry_body(bool chunked) {
    MessageBodySource body(*from.stream, buffer, parser, std::span<char>(chunk), 1s);
    SocketBodySink sink(*to.stream, &head, chunked, 1s);
    co_return co_await carry_whole(body, sink);
  }
};

TEST_F(CarryResponse, ChunksABodyOfKnownLengthAnewAfterTheHead) {
  loop.run([&]() -> io::Awaitable<void> {
    co_await net::async_write(
        from.peer,
        net::buffer(std::string_view("HTTP/1.1 200 OK\r\nContent-Length: 11\r\n\r\nhello world")),
        io::use_nothrow);
    co_await read_head();
    const Carried carried = co_await carry_body(true);
    EXPECT_FALSE(carried.error);
    EXPECT_EQ(co_await all_received(to),
              std::string(kResponseHead) + "b\r\nhello world\r\n0\r\n\r\n");
  });
}

TEST_F(CarryResponse, PassesAChunkedBodyOnAsItComesAcrossReads) {
  loop.run([&]() -> io::Awaitable<void> {
    co_await net::async_write(from.peer,
                              net::buffer(std::string_view(
                                  "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhel")),
                              io::use_nothrow);
    co_await read_head();
    // The rest comes a little later: the carry waits for it.
    io::Timer later(co_await net::this_coro::executor, 20ms);
    later.async_wait([&](const beast::error_code&) {
      net::async_write(from.peer, net::buffer(std::string_view("lo\r\n0\r\n\r\n")),
                       [](const beast::error_code&, std::size_t) {});
    });
    const Carried carried = co_await carry_body(false);
    EXPECT_FALSE(carried.error);
    EXPECT_EQ(co_await all_received(to), std::string(kResponseHead) + "hello");
  });
}

TEST_F(CarryResponse, WithoutABodyTheHeadGoesAlone) {
  loop.run([&]() -> io::Awaitable<void> {
    co_await net::async_write(
        from.peer, net::buffer(std::string_view("HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n")),
        io::use_nothrow);
    co_await read_head();
    const Carried carried = co_await carry_body(false);
    EXPECT_FALSE(carried.error);
    EXPECT_TRUE(carried.started);
    EXPECT_EQ(co_await all_received(to), std::string(kResponseHead));
  });
}

TEST_F(CarryResponse, ABodyCutShortIsTheSourcesFailureAfterWhatCame) {
  loop.run([&]() -> io::Awaitable<void> {
    co_await net::async_write(
        from.peer,
        net::buffer(std::string_view("HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\n1234")),
        io::use_nothrow);
    co_await read_head();
    io::Timer later(co_await net::this_coro::executor, 20ms);
    later.async_wait([&](const beast::error_code&) { from.peer.close(); });
    const Carried carried = co_await carry_body(false);
    EXPECT_EQ(carried.error, http::error::partial_message);
    EXPECT_TRUE(carried.source_failed);
    EXPECT_TRUE(carried.started) << "the first four bytes went on with the head";
    EXPECT_EQ(co_await all_received(to), std::string(kResponseHead) + "1234");
  });
}

/// Trailer fields as an HTTP/2 upstream's call gives them.
class GrpcStatusTrailers final : public Trailers {
 public:
  void write(HeadOut& out) const override {
    out.field("grpc-status", "0");
    out.field("grpc-message", "ok");
  }
};

TEST(SocketBodySink, WritesTrailersInTheLastChunk) {
  test::EventLoop loop;
  BodyLoopback to(loop.io());
  loop.run([&]() -> io::Awaitable<void> {
    SocketBodySink sink(*to.stream, nullptr, true, 1s);
    const GrpcStatusTrailers trailers;
    beast::error_code ec;
    EXPECT_TRUE(sink.send_now(BodyPiece{.bytes = std::string_view("abc")}, ec));
    EXPECT_TRUE(sink.send_now(BodyPiece{.bytes = {}, .last = true, .trailers = &trailers}, ec));
    EXPECT_FALSE(ec);
    EXPECT_EQ(co_await all_received(to),
              "3\r\nabc\r\n0\r\ngrpc-status: 0\r\ngrpc-message: ok\r\n\r\n");
  });
}

}  // namespace
}  // namespace sluice::http
