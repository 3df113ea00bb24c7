#include "proxy/io/tls_session.hpp"

#include <gtest/gtest.h>
#include <sys/socket.h>
#include <unistd.h>

#include <array>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/ssl/error.hpp>
#include <boost/asio/write.hpp>
#include <chrono>
#include <memory>
#include <string>
#include <utility>

#include "proxy/io/stream.hpp"
#include "tests/support/event_loop.hpp"
#include "tests/support/test_certificates.hpp"

namespace sluice::io {
namespace {

using namespace std::chrono_literals;

/// The test CA's localhost certificate as a server's context, and a client's that trusts it.
struct TlsContexts {
  TlsContexts() {
    server.use_certificate_chain_file(certificates.server_cert());
    server.use_private_key_file(certificates.server_key(), net::ssl::context::pem);
    client.load_verify_file(certificates.ca_cert());
    client.set_verify_mode(net::ssl::verify_peer);
  }
  test::TestCertificates certificates;
  net::ssl::context server{net::ssl::context::tls_server};
  net::ssl::context client{net::ssl::context::tls_client};
};

/// Two Streams on loopback, each with TLS laid over it: `server` accepted, `client` connected.
struct TlsPair {
  TlsPair(net::io_context& io, net::ssl::context& server_context,
          net::ssl::context& client_context) {
    Acceptor acceptor(io, tcp::endpoint(net::ip::make_address("127.0.0.1"), 0));
    Socket connecting(io);
    connecting.connect(acceptor.local_endpoint());
    connecting.set_option(tcp::no_delay(true));
    client = std::make_unique<Stream>(std::move(connecting));
    server = std::make_unique<Stream>(acceptor.accept());
    server->start_tls(server_context);
    client->start_tls(client_context);
    server->expires_after(30s);
    client->expires_after(30s);
  }
  std::unique_ptr<Stream> server;
  std::unique_ptr<Stream> client;
};

/// Both handshakes, side by side; fails the test if either fails.
Awaitable<void> handshake_both(TlsPair& pair) {
  bool server_done = false;
  beast::error_code server_error;
  net::co_spawn(
      co_await net::this_coro::executor,
      [&]() -> Awaitable<void> {
        std::tie(server_error) =
            co_await pair.server->async_handshake(net::ssl::stream_base::server, use_nothrow);
        server_done = true;
      },
      net::detached);
  auto [client_error] =
      co_await pair.client->async_handshake(net::ssl::stream_base::client, use_nothrow);
  EXPECT_FALSE(client_error) << client_error.message();
  Timer tick(co_await net::this_coro::executor);
  while (!server_done) {
    tick.expires_after(1ms);
    co_await tick.async_wait(use_nothrow);
  }
  EXPECT_FALSE(server_error) << server_error.message();
}

/// Reads from `stream` until `size` bytes came, or an error.
Awaitable<std::pair<beast::error_code, std::string>> read_all_of(Stream& stream, std::size_t size) {
  std::string received(size, '\0');
  auto [ec, n] = co_await net::async_read(stream, net::buffer(received), use_nothrow);
  received.resize(n);
  co_return std::pair{ec, received};
}

/// One read of up to 64 bytes.
Awaitable<std::pair<beast::error_code, std::string>> read_up_to_64(Stream& stream) {
  std::array<char, 64> bytes{};
  auto [ec, n] = co_await stream.async_read_some(net::buffer(bytes), use_nothrow);
  co_return std::pair{ec, std::string(bytes.data(), n)};
}

class TlsOnLoopback : public ::testing::Test {
 protected:
  TlsContexts contexts;
  test::EventLoop loop;
  TlsPair pair{loop.io(), contexts.server, contexts.client};
};

TEST_F(TlsOnLoopback, WritesOfEverySizeAndShapeArriveWholeBothWays) {
  loop.run([&]() -> Awaitable<void> {
    co_await handshake_both(pair);
    for (std::size_t size = 1; size <= 70'000; size = size * 3 + 1) {
      // Three pieces at a time, as a head and a body go: short ones are gathered into one
      // record, long ones go out by themselves; both must arrive in order, whole.
      const std::string text(size, static_cast<char>('a' + size % 26));
      const std::string head = "head:" + std::to_string(size) + "\n";
      const std::array<net::const_buffer, 3> pieces{net::buffer(head), net::buffer(text),
                                                    net::buffer(head)};
      const std::string whole = head + text + head;
      for (auto [from, to] : {std::pair{pair.client.get(), pair.server.get()},
                              std::pair{pair.server.get(), pair.client.get()}}) {
        net::co_spawn(
            co_await net::this_coro::executor,
            [&, writer = from]() -> Awaitable<void> {
              auto [ec, n] = co_await net::async_write(*writer, pieces, use_nothrow);
              EXPECT_FALSE(ec) << ec.message();
              EXPECT_EQ(n, whole.size());
            },
            net::detached);
        auto [ec, received] = co_await read_all_of(*to, whole.size());
        EXPECT_FALSE(ec) << ec.message() << " at size " << size;
        EXPECT_TRUE(received == whole) << "at size " << size;
      }
    }
  });
}

TEST_F(TlsOnLoopback, AWriteTheSocketCannotTakeAtOnceWaitsUntilThePeerReads) {
  loop.run([&]() -> Awaitable<void> {
    co_await handshake_both(pair);
    const std::string large(16 << 20, 'x');  // far more than loopback's socket buffers
    bool written = false;
    net::co_spawn(
        co_await net::this_coro::executor,
        [&]() -> Awaitable<void> {
          auto [ec, n] = co_await net::async_write(*pair.server, net::buffer(large), use_nothrow);
          EXPECT_FALSE(ec) << ec.message();
          EXPECT_EQ(n, large.size());
          written = true;
        },
        net::detached);
    Timer pause(co_await net::this_coro::executor, 50ms);  // the writer fills the socket
    co_await pause.async_wait(use_nothrow);
    EXPECT_FALSE(written);
    auto [ec, received] = co_await read_all_of(*pair.client, large.size());
    EXPECT_FALSE(ec) << ec.message();
    EXPECT_TRUE(received == large);
  });
}

TEST_F(TlsOnLoopback, ReadsAndWritesGoOnTogetherOnOneConnection) {
  loop.run([&]() -> Awaitable<void> {
    co_await handshake_both(pair);
    // Each side writes 4 MiB while it reads the other's: neither could finish alone.
    const std::string from_server(4 << 20, 's');
    const std::string from_client(4 << 20, 'c');
    int writers_done = 0;
    for (auto [writer, text] :
         {std::pair{pair.server.get(), &from_server}, std::pair{pair.client.get(), &from_client}}) {
      net::co_spawn(
          co_await net::this_coro::executor,
          [&, writer, text]() -> Awaitable<void> {
            auto [ec, n] = co_await net::async_write(*writer, net::buffer(*text), use_nothrow);
            EXPECT_FALSE(ec) << ec.message();
            ++writers_done;
          },
          net::detached);
    }
    std::pair<beast::error_code, std::string> at_server;
    bool server_read = false;
    net::co_spawn(
        co_await net::this_coro::executor,
        [&]() -> Awaitable<void> {
          at_server = co_await read_all_of(*pair.server, from_client.size());
          server_read = true;
        },
        net::detached);
    auto at_client = co_await read_all_of(*pair.client, from_server.size());
    Timer tick(co_await net::this_coro::executor);
    while (!server_read || writers_done < 2) {
      tick.expires_after(1ms);
      co_await tick.async_wait(use_nothrow);
    }
    EXPECT_FALSE(at_client.first);
    EXPECT_TRUE(at_client.second == from_server);
    EXPECT_FALSE(at_server.first);
    EXPECT_TRUE(at_server.second == from_client);
  });
}

TEST_F(TlsOnLoopback, BytesThatCameWithTheHandshakeAreReadableWithoutAnEvent) {
  loop.run([&]() -> Awaitable<void> {
    co_await handshake_both(pair);
    // Two records written together: the first read takes what fits in its buffer and OpenSSL
    // keeps the rest; the wait for more must see it, not wait for an epoll event.
    const std::string first(40, '1');
    const std::string second(40, '2');
    const std::array<net::const_buffer, 2> both{net::buffer(first), net::buffer(second)};
    co_await net::async_write(*pair.client, both, use_nothrow);
    auto [ec, got] = co_await read_up_to_64(*pair.server);  // 64 of the 80 bytes
    EXPECT_FALSE(ec);
    EXPECT_EQ(got, first + second.substr(0, 24));
    pair.server->expires_after(200ms);  // a wait for an event that will not come would time out
    auto [waited] = co_await pair.server->async_wait_readable(use_nothrow);
    EXPECT_FALSE(waited) << waited.message();
    auto [rest_error, rest] = co_await read_up_to_64(*pair.server);
    EXPECT_FALSE(rest_error);
    EXPECT_EQ(rest, second.substr(24));
  });
}

TEST_F(TlsOnLoopback, ACloseNotifyEndsThePeersReadsWithEndOfStream) {
  loop.run([&]() -> Awaitable<void> {
    co_await handshake_both(pair);
    EXPECT_TRUE(pair.server->tls_can_close_cleanly());
    auto [shut] = co_await pair.server->async_tls_shutdown(use_nothrow);
    EXPECT_FALSE(shut) << shut.message();
    EXPECT_FALSE(pair.server->tls_can_close_cleanly());
    EXPECT_EQ((co_await read_up_to_64(*pair.client)).first, net::error::eof);
  });
}

TEST_F(TlsOnLoopback, AConnectionClosedWithoutCloseNotifyIsTruncated) {
  loop.run([&]() -> Awaitable<void> {
    co_await handshake_both(pair);
    // The TCP connection's end without TLS's (a close would reset it: the client has not read
    // the server's session tickets).
    pair.client->socket().shutdown(Socket::shutdown_send);
    const beast::error_code ec = (co_await read_up_to_64(*pair.server)).first;
    EXPECT_EQ(ec, net::ssl::error::stream_truncated) << ec.message();
    EXPECT_TRUE(is_tls_error(ec));
  });
}

TEST_F(TlsOnLoopback, AHandshakeWithAPeerThatDoesNotTrustTheCertificateFailsAsTls) {
  net::ssl::context distrustful(net::ssl::context::tls_client);
  distrustful.load_verify_file(contexts.certificates.other_ca_cert());
  distrustful.set_verify_mode(net::ssl::verify_peer);
  TlsPair other(loop.io(), contexts.server, distrustful);
  loop.run([&]() -> Awaitable<void> {
    net::co_spawn(
        co_await net::this_coro::executor,
        [&]() -> Awaitable<void> {
          co_await other.server->async_handshake(net::ssl::stream_base::server, use_nothrow);
        },
        net::detached);
    auto [ec] = co_await other.client->async_handshake(net::ssl::stream_base::client, use_nothrow);
    EXPECT_EQ(ec.category(), net::error::get_ssl_category()) << ec.message();
    EXPECT_TRUE(is_tls_error(ec));
  });
}

TEST_F(TlsOnLoopback, ATlsReadEndsWithATimeoutAtItsDeadline) {
  loop.run([&]() -> Awaitable<void> {
    co_await handshake_both(pair);
    pair.server->expires_after(30ms);
    EXPECT_EQ((co_await read_up_to_64(*pair.server)).first, beast::error::timeout);
    EXPECT_TRUE(pair.server->timed_out());
  });
}

TEST(TlsSession, AClosedSocketIsNeverReachedThroughTheDescriptorItHad) {
  TlsContexts contexts;
  test::EventLoop loop;
  TlsPair pair(loop.io(), contexts.server, contexts.client);
  // The session reads its socket through the socket object, so once the socket is closed (as a
  // deadline closes it) it fails, rather than read the descriptor number that the kernel gives
  // the next connection.
  TlsSession session(contexts.server, pair.server->socket());
  session.begin_handshake(net::ssl::stream_base::server);
  const int old_descriptor = pair.server->socket().native_handle();
  pair.server->socket().close();
  std::array<int, 2> next{};
  ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM, 0, next.data()), 0);  // takes the lowest numbers
  const int reused = next[0] == old_descriptor ? next[0] : next[1];
  ASSERT_EQ(reused, old_descriptor);
  const int other_end = reused == next[0] ? next[1] : next[0];
  ASSERT_EQ(::write(other_end, "\x16", 1), 1);  // what a TLS record starts with
  std::array<char, 16> bytes{};
  const TlsSession::Step step = session.read(net::buffer(bytes));
  EXPECT_EQ(step.wait, TlsSession::Wait::none);
  EXPECT_EQ(step.error, net::error::bad_descriptor) << step.error.message();
  std::array<char, 1> peeked{};
  EXPECT_EQ(::recv(reused, peeked.data(), 1, MSG_PEEK | MSG_DONTWAIT), 1);  // still there
  ::close(next[0]);
  ::close(next[1]);
}

}  // namespace
}  // namespace sluice::io
