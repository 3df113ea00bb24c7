// Relaying over real sockets: kept-alive upstream connections, Expect: 100-continue, upgrade
// tunnels, and bodies far larger than memory should hold.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <array>
#include <fstream>
#include <string>

#include "tests/support/proxy_fixture.hpp"

namespace sluice::test {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

TEST(Proxy, ReusesUpstreamConnections) {
  ProxyFixture proxy("routes: [{name: all}]", "threads: 1");
  for (int i = 0; i < 20; ++i) {
    ASSERT_EQ(proxy.send(get("/n/" + std::to_string(i))).result(), http::status::ok);
  }
  EXPECT_EQ(proxy.upstream().requests(), 20);
  EXPECT_EQ(proxy.upstream().connections(), 1);
}

TEST(Proxy, RetriesARequestOnAConnectionTheUpstreamClosedWhileParked) {
  ProxyFixture proxy("routes: [{name: all}]", "threads: 1");
  // The upstream closes every connection right after answering, though it says keep-alive: the
  // next request finds its parked connection dead and must still succeed, on a new one.
  for (int i = 0; i < 20; ++i) {
    ASSERT_EQ(proxy.send(get("/then-close")).result(), http::status::ok) << i;
  }
  EXPECT_EQ(proxy.upstream().requests(), 20);
  EXPECT_EQ(proxy.upstream().connections(), 20);
}

TEST(Proxy, NeverSendsAPostTwiceButRepeatsAGet) {
  // Each time a parked connection takes a request the upstream reads and dies on: a GET is
  // repeated on a new connection, a POST gets 502 and reaches the upstream once.
  for (const http::verb method : {http::verb::get, http::verb::post}) {
    ProxyFixture proxy("routes: [{name: all}]", "threads: 1");
    ASSERT_EQ(proxy.send(get("/warm")).result(), http::status::ok);  // parks a connection
    http::request<http::string_body> request{method, "/dies-once", 11};
    const auto response = proxy.send(request);
    if (method == http::verb::get) {
      EXPECT_EQ(response.result(), http::status::ok);
      EXPECT_EQ(proxy.upstream().requests(), 3);  // /warm, /dies-once twice
    } else {
      EXPECT_EQ(response.result(), http::status::bad_gateway);
      EXPECT_EQ(proxy.upstream().requests(), 2);  // /warm, /dies-once once
    }
  }
}

TEST(Proxy, AnswersExpectContinueItself) {
  ProxyFixture proxy("routes: [{name: all}]");
  RawClient client(proxy.port());
  client.write(
      "POST /form HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\nExpect: 100-continue\r\n\r\n");
  // The client waits for the interim answer before it sends the body.
  EXPECT_THAT(client.read_until("\r\n\r\n"), StartsWith("HTTP/1.1 100 Continue\r\n\r\n"));
  client.write("hello");
  const std::string reply = client.read_until("body 5 ");
  EXPECT_THAT(reply, HasSubstr("HTTP/1.1 200 OK"));
  EXPECT_THAT(reply,
              HasSubstr("body 5 " + std::to_string(sluice::test::TestUpstream::checksum("hello"))));
  EXPECT_THAT(reply, testing::Not(HasSubstr("Expect:")));  // answered here, not forwarded
}

TEST(Proxy, RefusesALimitedExpectContinueRequestWithoutReadingItsBody) {
  ProxyFixture proxy(
      "limiters:\n  one: {algorithm: fixed_window, limit: 1, window: 1h}\n"
      "routes: [{name: all, limiters: [one]}]");
  proxy.send(get("/"));
  const std::string reply = proxy.send_raw(
      "POST /form HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\nExpect: 100-continue\r\n\r\n");
  EXPECT_THAT(reply, StartsWith("HTTP/1.1 429 Too Many Requests"));
  EXPECT_THAT(reply, testing::Not(HasSubstr("100 Continue")));
}

TEST(Proxy, TunnelsAnUpgradedConnection) {
  ProxyFixture proxy("routes: [{name: all}]");
  RawClient client(proxy.port());
  client.write(
      "GET /chat HTTP/1.1\r\nHost: a\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n");
  const std::string head = client.read_until("\r\n\r\n");
  EXPECT_THAT(head, StartsWith("HTTP/1.1 101 Switching Protocols\r\n"));
  EXPECT_THAT(head, HasSubstr("Upgrade: websocket"));
  for (const std::string_view message : {"hello", "frames are just bytes here"}) {
    client.write(message);
    EXPECT_EQ(client.read_until(message), message);
  }
}

/// The process's peak resident memory (VmHWM), in bytes.
std::size_t peak_resident_bytes() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.starts_with("VmHWM:")) {
      return std::stoull(line.substr(6)) * 1024;
    }
  }
  return 0;
}

constexpr std::uint64_t kGiB = 1ULL << 30;
constexpr std::size_t kMemoryAllowance = 64 << 20;  // buffers, threads, allocator slack

// The long suite, `LargeBody.*`: run once, by the `test` preset (the sanitizers' presets leave it
// out: gigabytes through ASan or TSan take minutes and find nothing the smaller bodies do not).
TEST(LargeBody, AGibibyteUploadStreamsThroughWithFlatMemory) {
  ProxyFixture proxy("routes: [{name: all}]");
  const std::size_t before = peak_resident_bytes();
  RawClient client(proxy.port());
  client.write("POST /upload HTTP/1.1\r\nHost: a\r\nContent-Length: " + std::to_string(kGiB) +
               "\r\n\r\n");
  std::array<char, 256 * 1024> chunk;
  for (std::size_t i = 0; i < chunk.size(); ++i) {
    chunk[i] = static_cast<char>(i * 7);
  }
  std::uint64_t sum = 0;
  for (std::uint64_t sent = 0; sent < kGiB; sent += chunk.size()) {
    client.write({chunk.data(), chunk.size()});
    sum = sluice::test::TestUpstream::checksum({chunk.data(), chunk.size()}, sum);
  }
  // Read up to the echo's last line only: the connection stays open (keep-alive).
  const std::string echoed = "body " + std::to_string(kGiB) + " " + std::to_string(sum) + "\n";
  EXPECT_THAT(client.read_until(echoed), HasSubstr(echoed));
  EXPECT_LT(peak_resident_bytes() - before, kMemoryAllowance);
}

TEST(LargeBody, AGibibyteDownloadStreamsThroughWithFlatMemory) {
  ProxyFixture proxy("routes: [{name: all}]");
  const std::size_t before = peak_resident_bytes();
  net::io_context io;
  beast::tcp_stream stream(io);
  stream.connect(tcp::endpoint(net::ip::make_address("127.0.0.1"), proxy.port()));
  auto request = get("/bytes/" + std::to_string(kGiB));
  request.set(http::field::host, "a");
  http::write(stream, request);
  beast::flat_buffer buffer;
  http::response_parser<http::buffer_body> parser;
  parser.body_limit(boost::none);
  http::read_header(stream, buffer, parser);
  ASSERT_EQ(parser.get().result(), http::status::ok);
  EXPECT_EQ(parser.content_length().value_or(0), kGiB);
  std::array<char, 256 * 1024> chunk;
  std::uint64_t received = 0;
  std::uint64_t wrong = 0;
  while (!parser.is_done()) {
    parser.get().body().data = chunk.data();
    parser.get().body().size = chunk.size();
    beast::error_code ec;
    http::read(stream, buffer, parser, ec);
    ASSERT_TRUE(!ec || ec == http::error::need_buffer) << ec.message();
    const std::size_t n = chunk.size() - parser.get().body().size;
    for (std::size_t i = 0; i < n; ++i) {
      wrong += chunk[i] != static_cast<char>('a' + (received + i) % 26);
    }
    received += n;
  }
  EXPECT_EQ(received, kGiB);
  EXPECT_EQ(wrong, 0U);
  EXPECT_LT(peak_resident_bytes() - before, kMemoryAllowance);
}

}  // namespace
}  // namespace sluice::test
