// Strict HTTP/1.1 (RFC 9112, and RFC 9110's hop-by-hop rules) over real sockets: raw bytes from
// a client, through the proxy, to an upstream. Requests the proxy must refuse (400 and close,
// before the upstream sees them), requests it must forward changed, and upstream responses it
// must refuse (502) or pass on framed as the client can read them. docs/http-conformance.md's table
// "Strict HTTP/1.1" names the requirement each test shows.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <sys/time.h>

#include <array>
#include <cerrno>
#include <chrono>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "tests/support/proxy_fixture.hpp"

namespace sluice::test {
namespace {

using namespace std::string_literals;
using ::testing::EndsWith;
using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::StartsWith;

/// Short enough that a proxy which keeps a connection open where it should close it fails a
/// test at once rather than after a minute.
constexpr std::string_view kTimeouts = "timeouts: {header: 2s, idle: 2s}";

/// The proxy in front of the echoing test upstream.
struct Proxy : ProxyFixture {
  explicit Proxy(const std::string& routes = "routes: [{name: all}]")
      : ProxyFixture(routes, std::string(kTimeouts)) {}
};

int occurrences(std::string_view text, std::string_view part) {
  int count = 0;
  for (std::size_t at = text.find(part); at != std::string_view::npos;
       at = text.find(part, at + 1)) {
    ++count;
  }
  return count;
}

/// What follows the first head in `reply`: the test upstream's echo of the request it got.
std::string body_of(const std::string& reply) {
  const std::size_t end = reply.find("\r\n\r\n");
  return end == std::string::npos ? std::string() : reply.substr(end + 4);
}

/// `reply` is one response with `status` ("400 Bad Request") that closes the connection, and
/// nothing after it: a request behind the refused one was not read as a request of its own.
void expect_refused(const std::string& reply, std::string_view status) {
  EXPECT_THAT(reply, StartsWith("HTTP/1.1 " + std::string(status) + "\r\n")) << reply;
  EXPECT_THAT(reply, HasSubstr("\r\nConnection: close\r\n"));
  EXPECT_EQ(occurrences(reply, "HTTP/1."), 1) << reply;
}

/// Each request refused with `status` and never forwarded.
void expect_all_refused(std::initializer_list<std::string> requests, std::string_view status) {
  Proxy proxy;
  for (const std::string& request : requests) {
    SCOPED_TRACE(request);
    expect_refused(proxy.send_raw(request), status);
  }
  EXPECT_EQ(proxy.upstream().requests(), 0);
}

/// A request behind `head` (on the same connection), which a proxy that misread the first
/// one's framing would take for a request of its own.
std::string smuggling(std::string_view head) {
  return std::string(head) + "GET /smuggled HTTP/1.1\r\nHost: a\r\n\r\n";
}

/// The proxy in front of an upstream that answers `response` to every request and then closes.
struct CannedProxy {
  explicit CannedProxy(std::string response, bool close_after = true)
      : upstream(std::move(response), close_after),
        proxy("routes: [{name: all, upstream: \"" + upstream.url() + "\"}]",
              "threads: 1\n" + std::string(kTimeouts)) {}
  CannedUpstream upstream;
  ProxyFixture proxy;
};

constexpr std::string_view kGet = "GET / HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n";

/// What arrived on `client` until the proxy closed it (`closed`), or for at most 3 s.
struct Arrived {
  std::string text;
  bool closed = false;
};
Arrived read_for_3_seconds(RawClient& client) {
  // recv(2) itself, with a receive timeout: Asio's blocking reads would wait on past it.
  const int fd = client.socket().native_handle();
  const timeval deadline{.tv_sec = 3, .tv_usec = 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &deadline, sizeof deadline);
  Arrived arrived;
  for (;;) {
    std::array<char, 4096> chunk;
    const ssize_t n = ::recv(fd, chunk.data(), chunk.size(), 0);
    if (n <= 0) {
      arrived.closed = n == 0 || errno == ECONNRESET;
      return arrived;
    }
    arrived.text.append(chunk.data(), static_cast<std::size_t>(n));
  }
}

/// Sends `bytes` and reads until the proxy closes, for at most 3 s: with the proxy's own
/// timeouts at a minute, an answer that comes came from the bytes, not from a timeout.
std::string reply_within_deadline(unsigned short port, std::string_view bytes) {
  RawClient client(port);
  client.write(bytes);
  return read_for_3_seconds(client).text;
}

/// A proxy whose timeouts no test waits for.
constexpr std::string_view kPatient = "timeouts: {header: 60s, idle: 60s}";

// --- Message body length of a request (RFC 9112 §6) ---

TEST(StrictHttp, RefusesATransferEncodingThatDoesNotEndInChunked) {
  expect_all_refused(
      {smuggling("POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: gzip\r\n\r\n"),
       smuggling("POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked, gzip\r\n\r\n"),
       smuggling("POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n"
                 "Transfer-Encoding: gzip\r\n\r\n"),
       smuggling("POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: \r\n\r\n"),
       smuggling("POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked;q=1\r\n\r\n"),
       smuggling("POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: xchunked\r\n\r\n")},
      "400 Bad Request");
}

TEST(StrictHttp, RefusesTransferEncodingWithContentLength) {
  expect_all_refused({smuggling("POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\n"
                                "Transfer-Encoding: chunked\r\n\r\n0\r\n\r\n"),
                      smuggling("POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n"
                                "Content-Length: 5\r\n\r\n0\r\n\r\n"),
                      smuggling("POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: gzip\r\n"
                                "Content-Length: 5\r\n\r\nhello")},
                     "400 Bad Request");
}

TEST(StrictHttp, RefusesChunkedAppliedTwice) {
  expect_all_refused(
      {smuggling("POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked, chunked\r\n\r\n"
                 "0\r\n\r\n"),
       smuggling("POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n"
                 "Transfer-Encoding: chunked\r\n\r\n0\r\n\r\n")},
      "400 Bad Request");
}

TEST(StrictHttp, RefusesTransferEncodingInHttp10) {
  expect_all_refused({"POST / HTTP/1.0\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n"
                      "5\r\nhello\r\n0\r\n\r\n"},
                     "400 Bad Request");
}

TEST(StrictHttp, Answers501ForTransferCodingsBesidesChunked) {
  expect_all_refused({"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: gzip, chunked\r\n\r\n"
                      "5\r\nhello\r\n0\r\n\r\n",
                      "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: gzip\r\n"
                      "Transfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n"},
                     "501 Not Implemented");
}

TEST(StrictHttp, RefusesInvalidOrConflictingContentLengths) {
  std::initializer_list<std::string> requests = {"Content-Length: 5\r\nContent-Length: 7",
                                                 "Content-Length: 5, 7",
                                                 "Content-Length: -1",
                                                 "Content-Length: +5",
                                                 "Content-Length: 0x5",
                                                 "Content-Length: 5 5",
                                                 "Content-Length: 99999999999999999999999",
                                                 "Content-Length: "};
  Proxy proxy;
  for (const std::string& length : requests) {
    SCOPED_TRACE(length);
    expect_refused(proxy.send_raw("POST / HTTP/1.1\r\nHost: a\r\n" + length + "\r\n\r\nhello"),
                   "400 Bad Request");
  }
  EXPECT_EQ(proxy.upstream().requests(), 0);
}

TEST(StrictHttp, ForwardsRepeatedEqualContentLengthsAsOne) {
  Proxy proxy;
  const std::string reply = proxy.send_raw(
      "POST /x HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\nContent-Length: 5, 5\r\n"
      "Connection: close\r\n\r\nhello");
  EXPECT_THAT(reply, StartsWith("HTTP/1.1 200 OK\r\n"));
  const std::string echo = body_of(reply);
  EXPECT_THAT(echo, HasSubstr("\nContent-Length: 5\n"));
  EXPECT_EQ(occurrences(echo, "Content-Length"), 1) << echo;
  EXPECT_THAT(echo, HasSubstr("body 5 " + std::to_string(TestUpstream::checksum("hello"))));
}

// --- Field syntax (RFC 9112 §5, RFC 9110 §5.5) ---

TEST(StrictHttp, RefusesObsoleteLineFolding) {
  expect_all_refused({"GET / HTTP/1.1\r\nHost: a\r\nX-Folded: one\r\n two\r\n\r\n",
                      "GET / HTTP/1.1\r\nHost: a\r\nX-Folded:\r\n\ttwo\r\n\r\n",
                      "GET / HTTP/1.1\r\nX-Folded: one\r\n  two\r\nHost: a\r\n\r\n"},
                     "400 Bad Request");
}

TEST(StrictHttp, RefusesWhitespaceBetweenFieldNameAndColon) {
  expect_all_refused(
      {"GET / HTTP/1.1\r\nHost : a\r\n\r\n", "GET / HTTP/1.1\r\nHost: a\r\nX-A\t: b\r\n\r\n"},
      "400 Bad Request");
}

TEST(StrictHttp, RefusesBareCrLfOrNulInAField) {
  expect_all_refused({"GET / HTTP/1.1\r\nHost: a\r\nX-A: a\rb\r\n\r\n",
                      "GET / HTTP/1.1\r\nHost: a\r\nX-A: a\nb\r\n\r\n",
                      "GET / HTTP/1.1\r\nHost: a\r\nX-A: a\0b\r\n\r\n"s,
                      "GET / HTTP/1.1\r\nHost: a\r\nX-A: a\x01"
                      "b\r\n\r\n",
                      "GET / HTTP/1.1\r\nHost: a\nX-A: b\r\n\r\n"},
                     "400 Bad Request");
}

TEST(StrictHttp, RefusesWhitespaceBeforeTheFirstField) {
  expect_all_refused({"GET / HTTP/1.1\r\n Host: a\r\n\r\n", "GET / HTTP/1.1\r\n\tHost: a\r\n\r\n"},
                     "400 Bad Request");
}

// --- Request line and target (RFC 9112 §3) ---

TEST(StrictHttp, IgnoresEmptyLinesBeforeARequestLine) {
  // Some clients send CRLF after a request's body; the next request still counts.
  Proxy proxy;
  const std::string reply = proxy.send_raw(
      "POST /one HTTP/1.1\r\nHost: a\r\nContent-Length: 2\r\n\r\nok\r\n"
      "\r\nGET /two HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n");
  EXPECT_THAT(reply, HasSubstr("\nPOST /one\n"));
  EXPECT_THAT(reply, HasSubstr("\nGET /two\n"));
  EXPECT_EQ(occurrences(reply, "HTTP/1.1 200 OK"), 2) << reply;
}

TEST(StrictHttp, ClosesAClientThatEndedItsSideAsSoonAsItIsAnswered) {
  // A client's FIN often comes with its last request. Once the read of that request has
  // emptied the socket of bytes, the FIN raises no epoll event of its own: the connection must
  // not wait for the idle timeout (a minute here) to read it.
  ProxyFixture proxy("routes: [{name: all}]", "log: {access: false}\n" + std::string(kPatient));
  for (int i = 0; i < 10; ++i) {
    RawClient client(proxy.port());
    client.write("GET /first HTTP/1.1\r\nHost: a\r\n\r\n");
    ASSERT_THAT(client.read_until("body 0 0\n"), StartsWith("HTTP/1.1 200 OK\r\n"));
    // Quiet for a while, as between a client's requests; then the last one, with the FIN in
    // the same segment (corked).
    std::this_thread::sleep_for(std::chrono::milliseconds(30));
    const int on = 1;
    ::setsockopt(client.socket().native_handle(), IPPROTO_TCP, TCP_CORK, &on, sizeof on);
    client.write("GET /last HTTP/1.1\r\nHost: a\r\n\r\n");
    client.socket().shutdown(tcp::socket::shutdown_send);
    const Arrived reply = read_for_3_seconds(client);
    EXPECT_THAT(reply.text, StartsWith("HTTP/1.1 200 OK\r\n"));
    ASSERT_TRUE(reply.closed) << "connection " << i << " still open after its answer";
  }
}

TEST(StrictHttp, RefusesMalformedRequestLines) {
  expect_all_refused(
      {"GET  / HTTP/1.1\r\nHost: a\r\n\r\n", "GET / HTTP/1.1 \r\nHost: a\r\n\r\n",
       "GET\t/ HTTP/1.1\r\nHost: a\r\n\r\n", " GET / HTTP/1.1\r\nHost: a\r\n\r\n",
       "GET /a b HTTP/1.1\r\nHost: a\r\n\r\n", "GET / http/1.1\r\nHost: a\r\n\r\n",
       "GET / HTTP/1.1\nHost: a\r\n\r\n", "GET /\r\n\r\n", "GET / HTTP/2.0\r\nHost: a\r\n\r\n",
       "GET / HTTP/1.2\r\nHost: a\r\n\r\n", "GET /\x7f HTTP/1.1\r\nHost: a\r\n\r\n"},
      "400 Bad Request");
}

TEST(StrictHttp, RefusesAMissingRepeatedOrInvalidHost) {
  expect_all_refused(
      {"GET / HTTP/1.1\r\n\r\n", "GET / HTTP/1.1\r\nHost: a\r\nHost: a\r\n\r\n",
       "GET / HTTP/1.0\r\nHost: a\r\nHost: b\r\n\r\n", "GET / HTTP/1.1\r\nHost: a b\r\n\r\n",
       "GET / HTTP/1.1\r\nHost: a/b\r\n\r\n", "GET / HTTP/1.1\r\nHost: user@a\r\n\r\n",
       "GET / HTTP/1.1\r\nHost: a:80x\r\n\r\n", "GET / HTTP/1.1\r\nHost: [::1\r\n\r\n"},
      "400 Bad Request");
  // Valid: none in HTTP/1.0, an IP literal with a port, an empty one.
  Proxy proxy;
  EXPECT_THAT(proxy.send_raw("GET / HTTP/1.0\r\n\r\n"), StartsWith("HTTP/1.0 200 OK\r\n"));
  EXPECT_THAT(proxy.send_raw("GET / HTTP/1.1\r\nHost: [::1]:8080\r\nConnection: close\r\n\r\n"),
              StartsWith("HTTP/1.1 200 OK\r\n"));
  EXPECT_THAT(proxy.send_raw("GET / HTTP/1.1\r\nHost:\r\nConnection: close\r\n\r\n"),
              StartsWith("HTTP/1.1 200 OK\r\n"));
}

TEST(StrictHttp, RoutesAndForwardsAnAbsoluteFormTargetByItsPathWithItsHost) {
  Proxy proxy(
      "limiters:\n  one: {algorithm: fixed_window, limit: 1, window: 1h}\n"
      "routes:\n  - {name: api, match: {path_prefix: /api/}, limiters: [one]}\n"
      "  - {name: rest}");
  const std::string reply = proxy.send_raw(
      "GET http://other.test/api/x?y=1 HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n");
  EXPECT_THAT(reply, StartsWith("HTTP/1.1 200 OK\r\n"));
  EXPECT_THAT(reply, HasSubstr("RateLimit-Policy: \"one\""));  // the api route's limiter
  EXPECT_THAT(reply, HasSubstr("\nGET /api/x?y=1\n"));
  EXPECT_THAT(reply, HasSubstr("\nHost: other.test\n"));  // the target's, not the field's
  EXPECT_THAT(reply, HasSubstr("\nX-Forwarded-Host: other.test\n"));
  // The same limit as the origin-form of the same path.
  EXPECT_THAT(proxy.send_raw("GET /api/x HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n"),
              StartsWith("HTTP/1.1 429 Too Many Requests\r\n"));
  // An empty path is "/"; HTTP/1.0 without a Host field gets the target's.
  EXPECT_THAT(proxy.send_raw("GET HTTP://other.test?q HTTP/1.1\r\nHost: a\r\n"
                             "Connection: close\r\n\r\n"),
              HasSubstr("\nGET /?q\n"));
  EXPECT_THAT(proxy.send_raw("GET http://other.test:8080/x HTTP/1.0\r\n\r\n"),
              HasSubstr("\nHost: other.test:8080\n"));
}

TEST(StrictHttp, RefusesTargetsInTheWrongFormAndAnswers501ToConnect) {
  expect_all_refused(
      {"GET * HTTP/1.1\r\nHost: a\r\n\r\n", "GET other.test:80 HTTP/1.1\r\nHost: a\r\n\r\n",
       "GET ftp://other.test/ HTTP/1.1\r\nHost: a\r\n\r\n",
       "GET http://user@other.test/ HTTP/1.1\r\nHost: a\r\n\r\n",
       "GET http:///x HTTP/1.1\r\nHost: a\r\n\r\n",
       "GET http://other.test/x#part HTTP/1.1\r\nHost: a\r\n\r\n"},
      "400 Bad Request");
  expect_all_refused({"CONNECT other.test:443 HTTP/1.1\r\nHost: other.test:443\r\n\r\n"},
                     "501 Not Implemented");
  Proxy proxy;
  EXPECT_THAT(proxy.send_raw("OPTIONS * HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n"),
              HasSubstr("\nOPTIONS *\n"));
}

TEST(StrictHttp, RefusesTargetsWithBytesOutsideAsciiOrAFragment) {
  // RFC 9112 §3.2: a request-target is visible ASCII; a fragment is no part of it.
  expect_all_refused({smuggling("GET /caf\xc3\xa9 HTTP/1.1\r\nHost: a\r\n\r\n"),
                      smuggling("GET /\x80 HTTP/1.1\r\nHost: a\r\n\r\n"),
                      smuggling("GET /a?q=\xff HTTP/1.1\r\nHost: a\r\n\r\n"),
                      smuggling("GET /index.html#.png HTTP/1.1\r\nHost: a\r\n\r\n"),
                      smuggling("GET /a?b#c HTTP/1.1\r\nHost: a\r\n\r\n"),
                      smuggling("GET # HTTP/1.1\r\nHost: a\r\n\r\n")},
                     "400 Bad Request");
  // Percent-encoded, the same bytes are fine.
  Proxy proxy;
  EXPECT_THAT(proxy.send_raw("GET /caf%C3%A9%23 HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n"),
              HasSubstr("\nGET /caf%C3%A9%23\n"));
}

TEST(StrictHttp, Answers414ForARequestLineOverTheHeaderLimit) {
  expect_all_refused({"GET /" + std::string(17000, 'a') + " HTTP/1.1\r\nHost: a\r\n\r\n"},
                     "414 URI Too Long");
}

// --- Chunked transfer coding (RFC 9112 §7) ---

TEST(StrictHttp, RefusesMalformedChunksWith400) {
  Proxy proxy;
  for (const std::string body :
       {"zz\r\nhello\r\n0\r\n\r\n", "5\r\nhelloXX0\r\n\r\n", "fffffffffffffffff1\r\nhello\r\n",
        "5;a\rb\r\nhello\r\n0\r\n\r\n", "5 \r\nhello\r\n0\r\n\r\n", "5\nhello\r\n0\r\n\r\n",
        "-5\r\nhello\r\n0\r\n\r\n"}) {
    SCOPED_TRACE(body);
    expect_refused(
        proxy.send_raw("POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n" + body),
        "400 Bad Request");
  }
}

TEST(StrictHttp, AnswersAChunkThatBreaksOffAtOnceAndClosesTheUpstreamSide) {
  // Beast waits for more bytes after these; the bytes already prove the framing wrong: data
  // not followed by CRLF, an extension's quote left open at the line's end. The head has gone
  // upstream by then: that connection is closed too, never reused.
  ProxyFixture proxy("routes: [{name: all}]", std::string(kPatient));
  for (const std::string body :
       {"5\r\nABCDE0\r\n", "5\r\nABCDE\rX", "5;a=\"abc\";b=\"def; ghi\r\nhello\r\n",
        "5;a=\"open\r\n", "5\r\nhello\r\n0;x=\"y\r\n"}) {
    SCOPED_TRACE(body);
    expect_refused(reply_within_deadline(proxy.port(),
                                         "POST / HTTP/1.1\r\nHost: a\r\n"
                                         "Transfer-Encoding: chunked\r\n\r\n" +
                                             body),
                   "400 Bad Request");
    // The next request is served whole: it did not go on an upstream connection that still
    // waits for the rest of the broken body (where it would be read as chunk data).
    const std::string next = reply_within_deadline(proxy.port(), kGet);
    EXPECT_THAT(next, StartsWith("HTTP/1.1 200 OK\r\n"));
    EXPECT_THAT(next, HasSubstr("\r\n\r\nGET /\n"));
  }
}

TEST(StrictHttp, RefusesControlCharactersInChunkExtensions) {
  Proxy proxy;
  for (const std::string& body :
       {"5;a=\"x\ny\"\r\nhello\r\n0\r\n\r\n"s, "5;a=\"x\0y\"\r\nhello\r\n0\r\n\r\n"s,
        "5\r\nhello\r\n0;a=\"\n\"\r\n\r\n"s}) {
    SCOPED_TRACE(body);
    expect_refused(
        proxy.send_raw("POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n" + body),
        "400 Bad Request");
  }
  // Extensions themselves are allowed, and not forwarded (the body is chunked anew).
  const std::string reply = proxy.send_raw(
      "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n"
      "5;name=\"quoted; value\";other\r\nhello\r\n0\r\n\r\n");
  EXPECT_THAT(reply, HasSubstr("body 5 " + std::to_string(TestUpstream::checksum("hello"))));
}

// --- Hop-by-hop fields, and what HTTP/1.0 does not know (RFC 9110 §7.6.1, §7.8, §10.1.1) ---

TEST(StrictHttp, RemovesHopByHopFieldsAndWhatEveryConnectionFieldNames) {
  Proxy proxy;
  const std::string reply = proxy.send_raw(
      "GET / HTTP/1.1\r\nHost: a\r\nConnection: keep-alive, X-One\r\nConnection: X-Two, close\r\n"
      "X-One: 1\r\nX-Two: 2\r\nX-Three: 3\r\nKeep-Alive: timeout=5\r\n"
      "Proxy-Connection: keep-alive\r\nTE: trailers\r\nTrailer: X-T\r\nUpgrade: h2c\r\n"
      "Proxy-Authorization: Basic eDp5\r\n\r\n");
  EXPECT_THAT(reply, StartsWith("HTTP/1.1 200 OK\r\n"));
  const std::string echo = body_of(reply);
  EXPECT_THAT(echo, HasSubstr("\nX-Three: 3\n"));
  for (const std::string_view dropped :
       {"\nX-One:", "\nX-Two:", "\nKeep-Alive:", "\nConnection:", "\nProxy-Connection:", "\nTE:",
        "\nTrailer:", "\nUpgrade:", "\nProxy-Authorization:"}) {
    EXPECT_THAT(echo, Not(HasSubstr(std::string(dropped)))) << dropped;
  }
}

TEST(StrictHttp, ConnectionOptionsCannotRemoveFramingHostOrTheRequestId) {
  Proxy proxy;
  const std::string reply = proxy.send_raw(
      "POST /x HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\nX-Request-Id: mine\r\n"
      "Connection: Content-Length, Host, X-Request-Id, close\r\n\r\nhello");
  EXPECT_THAT(reply, HasSubstr("\nHost: a\n"));
  EXPECT_THAT(reply, HasSubstr("body 5 " + std::to_string(TestUpstream::checksum("hello"))));
  EXPECT_THAT(reply, Not(HasSubstr("mine")));
  EXPECT_THAT(reply, ::testing::ContainsRegex("X-Request-Id: [0-9a-f]{32}\n"));
  const std::string chunked = proxy.send_raw(
      "POST /x HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n"
      "Connection: Transfer-Encoding, close\r\n\r\n5\r\nhello\r\n0\r\n\r\n");
  EXPECT_THAT(chunked, HasSubstr("body 5 " + std::to_string(TestUpstream::checksum("hello"))));
}

TEST(StrictHttp, IgnoresUpgradeInHttp10) {
  Proxy proxy;
  RawClient client(proxy.port());
  client.write(
      "GET /chat HTTP/1.0\r\nHost: a\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n");
  const std::string head = client.read_until("\r\n\r\n");  // (a tunnel would not close)
  EXPECT_THAT(head, StartsWith("HTTP/1.0 200 OK\r\n"));
  EXPECT_THAT(head + client.read_until(""), Not(HasSubstr("Upgrade")));
}

TEST(StrictHttp, IgnoresExpectContinueInHttp10) {
  // An HTTP/1.0 client knows no interim response: it would take a 100 for the answer.
  Proxy proxy;
  const std::string reply = proxy.send_raw(
      "POST /form HTTP/1.0\r\nContent-Length: 5\r\nExpect: 100-continue\r\n\r\nhello");
  EXPECT_THAT(reply, StartsWith("HTTP/1.0 200 OK\r\n"));
  EXPECT_THAT(reply, HasSubstr("body 5 " + std::to_string(TestUpstream::checksum("hello"))));
}

// --- Responses (RFC 9112 §6.3, §7; what the upstream sends back) ---

TEST(StrictHttp, PassesOnAResponseWhoseCodingsDoNotEndInChunkedUntilClose) {
  CannedProxy canned("HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n\r\n\x1f\x8b not chunked");
  // Kept alive by the client: the response still ends with the connection.
  const std::string reply = canned.proxy.send_raw("GET / HTTP/1.1\r\nHost: a\r\n\r\n");
  EXPECT_THAT(reply, StartsWith("HTTP/1.1 200 OK\r\n"));
  EXPECT_THAT(reply, HasSubstr("\r\nTransfer-Encoding: gzip\r\n"));
  EXPECT_THAT(reply, HasSubstr("\r\nConnection: close\r\n"));
  EXPECT_THAT(reply, Not(HasSubstr("chunked\r\n")));
  EXPECT_THAT(reply, EndsWith("\r\n\r\n\x1f\x8b not chunked"));
}

TEST(StrictHttp, KeepsTheUpstreamsCodingsWhenItChunksABodyAnew) {
  CannedProxy canned(
      "HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n");
  const std::string reply = canned.proxy.send_raw(std::string(kGet));
  EXPECT_THAT(reply, StartsWith("HTTP/1.1 200 OK\r\n"));
  EXPECT_THAT(reply, HasSubstr("\r\nTransfer-Encoding: gzip, chunked\r\n"));
  EXPECT_EQ(occurrences(reply, "Transfer-Encoding"), 1) << reply;
  EXPECT_THAT(reply, EndsWith("\r\n\r\n5\r\nhello\r\n0\r\n\r\n"));
}

TEST(StrictHttp, Answers502ToAnHttp10ClientForTransferCodings) {
  for (const std::string_view coding : {"gzip", "gzip, chunked"}) {
    SCOPED_TRACE(coding);
    CannedProxy canned("HTTP/1.1 200 OK\r\nTransfer-Encoding: " + std::string(coding) +
                       "\r\n\r\n0\r\n\r\n");
    EXPECT_THAT(canned.proxy.send_raw("GET / HTTP/1.0\r\n\r\n"),
                StartsWith("HTTP/1.0 502 Bad Gateway\r\n"));
  }
}

TEST(StrictHttp, Answers502ForInvalidResponseFraming) {
  for (const std::string& response : {
           "HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\nContent-Length: 5\r\n\r\nhello"s,
           "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nContent-Length: 5\r\n\r\n0\r\n\r\n"s,
           "HTTP/1.1 200 OK\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\nhello!"s,
           "HTTP/1.1 200 OK\r\nContent-Length: -5\r\n\r\n"s,
           "HTTP/1.0 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n"s,
           "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked, chunked\r\n\r\n0\r\n\r\n"s,
           "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked;x=1\r\n\r\n0\r\n\r\n"s,
           "HTTP/1.1 200 OK\r\nX-Bad : x\r\nContent-Length: 0\r\n\r\n"s,
           "HTTP/1.1 200 OK\r\nX-Bad: a\rb\r\nContent-Length: 0\r\n\r\n"s,
           "HTTP/1.1 200 OK\r\nX-Bad: a\0b\r\nContent-Length: 0\r\n\r\n"s,
           "HTTP/1.1 200 OK\r\n Content-Length: 0\r\n\r\n"s,
           "HTTP/1.1 099 Odd\r\nContent-Length: 0\r\n\r\n"s,
           "HTTP/1.1 600 Odd\r\nContent-Length: 0\r\n\r\n"s,
           "HTTP/1.1 200\r\nContent-Length: 0\r\n\r\n"s,
       }) {
    SCOPED_TRACE(response);
    CannedProxy canned(response);
    expect_refused(canned.proxy.send_raw(std::string(kGet)), "502 Bad Gateway");
  }
}

TEST(StrictHttp, Answers502ForAResponseBodyBrokenFromItsStart) {
  for (const std::string& response : {
           "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nhello\r\n0\r\n\r\n"s,
           "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5;a=\"\n\"\r\nhello\r\n"s,
           "HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\n"s,  // and then the upstream closes
       }) {
    SCOPED_TRACE(response);
    CannedProxy canned(response);
    expect_refused(canned.proxy.send_raw(std::string(kGet)), "502 Bad Gateway");
  }
}

TEST(StrictHttp, CutsShortAResponseWhoseBodyBreaksOff) {
  // The head has gone: the client must see that the body is incomplete, and the connection
  // closes. A chunked body gets no last chunk; a body of known length stays short.
  {
    CannedProxy canned("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\nzz\r\n");
    const std::string reply = canned.proxy.send_raw("GET / HTTP/1.1\r\nHost: a\r\n\r\n");
    EXPECT_THAT(reply, StartsWith("HTTP/1.1 200 OK\r\n"));
    EXPECT_THAT(reply, EndsWith("\r\n\r\n5\r\nhello\r\n"));
  }
  {
    CannedProxy canned("HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nhello");
    const std::string reply = canned.proxy.send_raw("GET / HTTP/1.1\r\nHost: a\r\n\r\n");
    EXPECT_THAT(reply, StartsWith("HTTP/1.1 200 OK\r\n"));
    EXPECT_THAT(reply, HasSubstr("\r\nContent-Length: 10\r\n"));
    EXPECT_THAT(reply, EndsWith("\r\n\r\nhello"));
  }
}

TEST(StrictHttp, SendsNoContentLengthOrTransferEncodingWithA204) {
  for (const std::string& response :
       {"HTTP/1.1 204 No Content\r\nContent-Length: 5\r\n\r\n"s,
        "HTTP/1.1 204 No Content\r\nTransfer-Encoding: chunked\r\n\r\n"s}) {
    SCOPED_TRACE(response);
    CannedProxy canned(response);
    const std::string reply = canned.proxy.send_raw(std::string(kGet));
    EXPECT_THAT(reply, StartsWith("HTTP/1.1 204 No Content\r\n"));
    EXPECT_THAT(reply, Not(HasSubstr("Content-Length")));
    EXPECT_THAT(reply, Not(HasSubstr("Transfer-Encoding")));
  }
  // A 304 keeps its Content-Length (that of the representation), with no body.
  CannedProxy canned("HTTP/1.1 304 Not Modified\r\nContent-Length: 5\r\n\r\n");
  const std::string reply = canned.proxy.send_raw(std::string(kGet));
  EXPECT_THAT(reply, HasSubstr("\r\nContent-Length: 5\r\n"));
  EXPECT_THAT(reply, EndsWith("\r\n\r\n"));
}

TEST(StrictHttp, UnfoldsObsoleteLineFoldingInAResponse) {
  CannedProxy canned("HTTP/1.1 200 OK\r\nX-Folded: one\r\n two\r\nContent-Length: 0\r\n\r\n");
  EXPECT_THAT(canned.proxy.send_raw(std::string(kGet)), HasSubstr("\r\nX-Folded: one two\r\n"));
}

TEST(StrictHttp, WritesTheResponsesContentLengthWhateverItsConnectionFieldNames) {
  CannedProxy canned(
      "HTTP/1.1 200 OK\r\nConnection: Content-Length\r\nContent-Length: 2\r\n\r\nok");
  const std::string reply = canned.proxy.send_raw(std::string(kGet));
  EXPECT_THAT(reply, HasSubstr("\r\nContent-Length: 2\r\n"));
  EXPECT_THAT(reply, EndsWith("\r\n\r\nok"));
}

TEST(StrictHttp, NeverReusesAnUpstreamConnectionWithBytesAfterTheResponse) {
  // Bytes nobody asked for after a response must not become the next request's response.
  CannedProxy canned(
      "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"
      "HTTP/1.1 200 OK\r\nContent-Length: 6\r\n\r\nPOISON",
      /*close_after=*/false);
  for (int i = 0; i < 2; ++i) {
    const std::string reply = canned.proxy.send_raw(std::string(kGet));
    EXPECT_THAT(reply, EndsWith("\r\n\r\nok"));
  }
  EXPECT_EQ(canned.upstream.connections(), 2);
}

TEST(StrictHttp, Answers502ForA101WithoutUpgrade) {
  CannedProxy canned("HTTP/1.1 101 Switching Protocols\r\nConnection: upgrade\r\n\r\n");
  RawClient client(canned.proxy.port());
  client.write(
      "GET /chat HTTP/1.1\r\nHost: a\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n");
  EXPECT_THAT(client.read_until("\r\n\r\n"), StartsWith("HTTP/1.1 502 Bad Gateway\r\n"));
}

// --- Answers to HEAD (RFC 9110 §9.3.2), and statuses without content (§15.3.5, §15.4.5) ---

/// The responses in `reply`, split where each head ends and its Content-Length says the body
/// does (the first has none: it answers HEAD): what a client reusing the connection reads.
std::vector<std::string> split_responses(std::string_view reply) {
  std::vector<std::string> responses;
  while (!reply.empty()) {
    const bool bodiless = responses.empty();
    const std::size_t end = reply.find("\r\n\r\n");
    if (end == std::string_view::npos) {
      responses.emplace_back(reply);
      break;
    }
    std::size_t length = end + 4;
    const std::size_t field = reply.substr(0, end).find("\r\nContent-Length: ");
    if (!bodiless && field != std::string_view::npos) {
      length += std::stoul(std::string(reply.substr(field + 18, end - field - 18)));
    }
    responses.emplace_back(reply.substr(0, length));
    reply.remove_prefix(std::min(length, reply.size()));
  }
  return responses;
}

TEST(StrictHttp, AnswersOfItsOwnToHeadHaveNoBodyAndKeepTheirContentLength) {
  Proxy proxy(
      "limiters:\n  one: {algorithm: fixed_window, limit: 1, window: 1h}\n"
      "routes:\n  - {name: status, match: {path: /status}, respond: {status: 200, body: "
      "\"ok\\n\"}}\n"
      "  - {name: limited, match: {path: /limited}, limiters: [one]}\n"
      "  - {name: empty, match: {path: /empty}, respond: {status: 204}}\n"
      "  - {name: gone, match: {path: /gone}, upstream: \"http://127.0.0.1:1\"}");
  // Each HEAD then a GET, pipelined on one connection: a body after the HEAD's head would be
  // read as the start of the GET's response.
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"/nope", "404 Not Found"},   {"/status", "200 OK"},
      {"/limited", "200 OK"},       {"/limited", "429 Too Many Requests"},
      {"/gone", "502 Bad Gateway"}, {"/empty", "204 No Content"}};
  for (const auto& [path, status] : cases) {
    SCOPED_TRACE(path + " " + status);
    RawClient client(proxy.port());
    client.write("HEAD " + path +
                 " HTTP/1.1\r\nHost: a\r\n\r\n"
                 "GET /after HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n");
    const std::string reply = client.read_until("");
    const std::vector<std::string> responses = split_responses(reply);
    ASSERT_GE(responses.size(), 1u) << reply;
    EXPECT_THAT(responses[0], StartsWith("HTTP/1.1 " + status + "\r\n"));
    EXPECT_THAT(responses[0], EndsWith("\r\n\r\n"));
    if (status.starts_with("204")) {
      EXPECT_THAT(responses[0], Not(HasSubstr("Content-Length")));
    } else {
      EXPECT_THAT(responses[0], HasSubstr("\r\nContent-Length: "));
    }
    if (status.starts_with("502")) {
      continue;  // a failed upstream closes the connection
    }
    // The next response starts right after the head.
    ASSERT_EQ(responses.size(), 2u) << reply;
    EXPECT_THAT(responses[1], StartsWith("HTTP/1.1 404 Not Found\r\n"));
  }
  // The same 404 to GET has the body whose length the HEAD's answer gave.
  const std::string get =
      proxy.send_raw("GET /nope HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n");
  const std::string head =
      proxy.send_raw("HEAD /nope HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n");
  EXPECT_EQ(get.substr(0, get.find("\r\n\r\n") + 4), head);
}

TEST(StrictHttp, ARefusedHeadRequestGetsABodilessAnswer) {
  Proxy proxy;
  const std::string reply = proxy.send_raw("HEAD / HTTP/1.1\r\nHost: a\r\nBad Field: x\r\n\r\n");
  expect_refused(reply, "400 Bad Request");
  EXPECT_THAT(reply, HasSubstr("\r\nContent-Length: "));
  EXPECT_THAT(reply, EndsWith("\r\n\r\n"));
}

}  // namespace
}  // namespace sluice::test
