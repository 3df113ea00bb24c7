// HTTP/2 clients over real sockets: prior-knowledge h2c and ALPN h2 in front of the HTTP/1.1
// TestUpstream, with real clients (curl, the HTTP/2 peer in tests/support/h2_peer.py, gRPC's
// Python client in tests/support/grpc_peer.py).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <array>
#include <boost/json.hpp>
#include <chrono>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <thread>

#include "tests/support/minted_jwts.hpp"
#include "tests/support/proxy_fixture.hpp"
#include "tests/support/reloadable_proxy.hpp"
#include "tests/support/shell.hpp"
#include "tests/support/temp_directory.hpp"
#include "tests/support/test_certificates.hpp"
#include "tests/support/test_upstream.hpp"

namespace sluice::test {
namespace {

using namespace std::chrono_literals;
using ::testing::HasSubstr;
using ::testing::StartsWith;
namespace json = boost::json;

/// Runs h2_peer.py `arguments` (scenario first) against 127.0.0.1:`port`; its JSON line.
json::object h2_peer(unsigned short port, const std::string& arguments) {
  const std::string out =
      output_of("/usr/bin/python3 " SLUICE_SOURCE_DIR "/tests/support/h2_peer.py " + arguments +
                " --port " + std::to_string(port) + " 2>/dev/null");
  boost::system::error_code ec;
  json::value value = json::parse(out, ec);
  if (ec || !value.is_object()) {
    ADD_FAILURE() << "h2_peer " << arguments << " printed: " << out;
    return {};
  }
  return std::move(value.as_object());
}

/// Runs grpc_peer.py's client with `arguments` against 127.0.0.1:`port`; its JSON line.
json::object grpc_client(unsigned short port, const std::string& arguments) {
  const std::string out = output_of("/usr/bin/python3 " SLUICE_SOURCE_DIR
                                    "/tests/support/grpc_peer.py client "
                                    "--target 127.0.0.1:" +
                                    std::to_string(port) + " " + arguments + " 2>/dev/null");
  boost::system::error_code ec;
  json::value value = json::parse(out, ec);
  if (ec || !value.is_object()) {
    ADD_FAILURE() << "grpc_peer client " << arguments << " printed: " << out;
    return {};
  }
  return std::move(value.as_object());
}

/// The JSON `value` as text (what a failed expectation shows).
std::string shown(const json::value& value) { return json::serialize(value); }

/// The status of the completed response on `stream`; 0 if there is none.
std::int64_t status_of(const json::object& result, const std::string& stream) {
  const json::object* responses =
      result.if_contains("responses") ? result.at("responses").if_object() : nullptr;
  const json::value* response = responses != nullptr ? responses->if_contains(stream) : nullptr;
  return response != nullptr ? response->at("status").as_int64() : 0;
}

/// The value at `key` in `object`, or null.
json::value at_or_null(const json::object& object, std::string_view key) {
  const json::value* found = object.if_contains(key);
  return found != nullptr ? *found : json::value();
}

/// The value at `key` of `result`'s `field` object, or null.
json::value entry(const json::object& result, std::string_view field, std::string_view key) {
  const json::value inner = at_or_null(result, field);
  return inner.is_object() ? at_or_null(inner.as_object(), key) : json::value();
}

/// How many of the result's completed responses have each status.
std::map<std::int64_t, int> statuses(const json::object& result) {
  std::map<std::int64_t, int> counts;
  for (const auto& [id, response] : result.at("responses").as_object()) {
    ++counts[response.as_object().at("status").as_int64()];
  }
  return counts;
}

/// The value of field `name` among [[name, value], ...] pairs; "" if absent.
std::string field(const json::value& pairs, std::string_view name) {
  for (const json::value& pair : pairs.as_array()) {
    if (pair.as_array().at(0).as_string() == name) {
      return std::string(pair.as_array().at(1).as_string());
    }
  }
  return "";
}

/// `curl -s ARGUMENTS URL`, printing what -w asks; stderr with it.
std::string curl(const std::string& arguments) {
  return output_of("curl -s --max-time 5 " + arguments + " 2>&1");
}

std::string url(unsigned short port, const std::string& path) {
  return "http://127.0.0.1:" + std::to_string(port) + path;
}

/// A ProxyFixture without an access log: these tests read responses, not log lines.
class QuietProxy : public ProxyFixture {
 public:
  explicit QuietProxy(const std::string& routes, const std::string& extra = "")
      : ProxyFixture(routes, "log: {access: false}\n" + extra) {}
};

TEST(Http2Downstream, ServesPriorKnowledgeH2cAndHttp11OnOnePort) {
  QuietProxy proxy(kForwardAll);
  const std::string h2 = curl("--http2-prior-knowledge -w '%{http_version} %{http_code}' " +
                              url(proxy.port(), "/path?x=1"));
  EXPECT_THAT(h2, StartsWith("GET /path?x=1\n"));
  EXPECT_THAT(h2, HasSubstr("\nhost: 127.0.0.1:" + std::to_string(proxy.port()) + "\n"));
  EXPECT_THAT(h2, HasSubstr("\nX-Forwarded-Proto: http\n"));
  EXPECT_THAT(h2, HasSubstr("\nbody 0 0\n"));
  EXPECT_THAT(h2, ::testing::EndsWith("\n2 200"));

  const auto h1 = proxy.send(get("/h1"));
  EXPECT_EQ(h1.result(), http::status::ok);
  EXPECT_THAT(h1.body(), StartsWith("GET /h1\n"));
  EXPECT_EQ(
      curl("--http1.1 -o /dev/null -w '%{http_version} %{http_code}' " + url(proxy.port(), "/")),
      "1.1 200");
  EXPECT_EQ(proxy.upstream().requests(), 3);
}

TEST(Http2Downstream, UploadsABodyWithAndWithoutContentLength) {
  QuietProxy proxy(kForwardAll);
  const std::string expected =
      "body 300000 " + std::to_string(TestUpstream::checksum(std::string(300'000, 'x'))) + "\n";
  for (const std::string framing : {"", " --no-content-length"}) {
    const json::object result =
        h2_peer(proxy.port(), "post --path /upload --body-bytes 300000 --show-body" + framing);
    ASSERT_EQ(status_of(result, "1"), 200) << shown(result);
    EXPECT_EQ(result.at("body_sent"), 300000) << shown(result);
    const std::string body(result.at("responses").at("1").at("body").as_string());
    EXPECT_THAT(body, StartsWith("POST /upload\n")) << framing;
    EXPECT_THAT(body, HasSubstr(expected)) << framing;
    // The upstream hears the length when the client said it, else a chunked body.
    EXPECT_THAT(body, HasSubstr(framing.empty() ? "\nContent-Length: 300000\n"
                                                : "\nTransfer-Encoding: chunked\n"))
        << body;
  }
}

/// An upstream that reads a request's head, then resets the connection with the body still
/// coming (as one that refuses an upload and hangs up at once).
class ResettingUpstream {
 public:
  ResettingUpstream() {
    accept();
    thread_ = std::thread([this] { io_.run(); });
  }
  ResettingUpstream(const ResettingUpstream&) = delete;
  ResettingUpstream& operator=(const ResettingUpstream&) = delete;
  ResettingUpstream(ResettingUpstream&&) = delete;
  ResettingUpstream& operator=(ResettingUpstream&&) = delete;
  ~ResettingUpstream() {
    io_.stop();
    thread_.join();
  }

  std::string url() const {
    return "http://127.0.0.1:" + std::to_string(acceptor_.local_endpoint().port());
  }

 private:
  struct Connection {
    explicit Connection(tcp::socket s) : socket(std::move(s)) {}
    tcp::socket socket;
    std::string received;
    std::array<char, 4096> buffer{};
  };

  void accept() {
    acceptor_.async_accept([this](beast::error_code ec, tcp::socket socket) {
      if (!ec) {
        read(std::make_shared<Connection>(std::move(socket)));
        accept();
      }
    });
  }

  void read(const std::shared_ptr<Connection>& connection) {
    connection->socket.async_read_some(
        net::buffer(connection->buffer), [this, connection](beast::error_code ec, std::size_t n) {
          if (ec) {
            return;
          }
          connection->received.append(connection->buffer.data(), n);
          if (connection->received.find("\r\n\r\n") == std::string::npos) {
            read(connection);
            return;
          }
          beast::error_code ignored;
          connection->socket.set_option(net::socket_base::linger(true, 0), ignored);
          connection->socket.close(ignored);  // a reset: the linger of 0 says so
        });
  }

  net::io_context io_;
  tcp::acceptor acceptor_{io_, tcp::endpoint(net::ip::make_address("127.0.0.1"), 0)};
  std::thread thread_;
};

TEST(Http2Downstream, UploadsTheUpstreamResetGiveTheirWindowBack) {
  ResettingUpstream refusing;
  QuietProxy proxy("routes:\n  - {name: refused, match: {path_prefix: /refused}, upstream: \"" +
                   refusing.url() + "\"}\n  - {name: all}");
  // Twenty uploads that the upstream resets mid-body (each a 502), then one that it takes, all
  // on one connection: what the refused ones had received and not passed on must go back to
  // the connection's window (256 KiB), or it shrinks until the last upload cannot be sent.
  const json::object result =
      h2_peer(proxy.port(),
              "post --path /upload --body-bytes 300000 --first-posts 20 --first-path /refused");
  EXPECT_EQ(statuses(result), (std::map<std::int64_t, int>{{200, 1}, {502, 20}})) << shown(result);
  EXPECT_EQ(result.at("body_sent"), 300000) << shown(result);
  EXPECT_EQ(status_of(result, "41"), 200) << shown(result);
}

TEST(Http2Downstream, UploadsAnsweredBeforeTheirEndAreResetAndFreeTheirPlaces) {
  QuietProxy proxy(
      "routes:\n  - {name: refused, match: {path_prefix: /refused}, respond: {status: 403}}\n"
      "  - {name: all}",
      "http2: {max_concurrent_streams: 4}\n");
  // Four uploads answered 403 at once; the client stops sending each when its answer comes.
  // Each stream is reset with NO_ERROR after its answer, so the fifth upload finds a place
  // among the connection's four.
  const json::object result =
      h2_peer(proxy.port(),
              "post --path /upload --body-bytes 300000 --first-posts 4 --first-path /refused");
  EXPECT_EQ(statuses(result), (std::map<std::int64_t, int>{{200, 1}, {403, 4}})) << shown(result);
  for (const char* id : {"1", "3", "5", "7"}) {
    EXPECT_EQ(entry(result, "resets", id), 0) << id << ": " << shown(result);
  }
  EXPECT_EQ(status_of(result, "9"), 200) << shown(result);
}

TEST(Http2Downstream, AShortUploadAnsweredBeforeItsEndIsReadToItsEnd) {
  QuietProxy proxy("routes:\n  - {name: refused, respond: {status: 403}}");
  // curl sends the body after the head; answered in between, the stream waits for the body
  // rather than stop it, which curl 7 would report as a failure (exit 92) after the answer.
  for (int i = 0; i < 20; ++i) {
    EXPECT_EQ(curl("--http2-prior-knowledge -sS -d '{\"a\":1}' -o /dev/null -w '%{http_code}' " +
                   url(proxy.port(), "/")),
              "403");
  }
}

TEST(Http2Downstream, ReusesUpstreamConnectionsAcrossStreams) {
  QuietProxy proxy(kForwardAll);
  // Four uploads one after the other on one connection: one kept-alive upstream connection.
  const json::object result =
      h2_peer(proxy.port(), "post --path /last --body-bytes 1000 --first-posts 3 --first-path /a");
  EXPECT_EQ(statuses(result), (std::map<std::int64_t, int>{{200, 4}})) << shown(result);
  EXPECT_EQ(proxy.upstream().connections(), 1);
}

TEST(Http2Downstream, RepeatsAGetButNeverAPostOnAConnectionTheUpstreamDropped) {
  // As for an HTTP/1.1 client: a parked upstream connection takes a request the upstream reads
  // and dies on; a GET is sent again on a new connection, a POST gets 502 and reaches the
  // upstream once.
  for (const std::string method : {"GET", "POST"}) {
    SCOPED_TRACE(method);
    QuietProxy proxy(kForwardAll, "threads: 1");  // one loop, one pool
    ASSERT_EQ(curl("--http2-prior-knowledge -o /dev/null -w '%{http_code}' " +
                   url(proxy.port(), "/warm")),
              "200");  // parks a connection
    EXPECT_EQ(curl("--http2-prior-knowledge -X " + method + " -o /dev/null -w '%{http_code}' " +
                   url(proxy.port(), "/dies-once")),
              method == "GET" ? "200" : "502");
    EXPECT_EQ(proxy.upstream().requests(), method == "GET" ? 3 : 2);
  }
}

TEST(Http2Downstream, StreamsADownloadWhole) {
  QuietProxy proxy(kForwardAll);
  const TempDirectory directory("sluice-h2");
  const std::string file = (directory.path() / "download.bin").string();
  EXPECT_EQ(curl("--http2-prior-knowledge -o " + file +
                 " -w '%{http_version} %{http_code} %{size_download}' " +
                 url(proxy.port(), "/bytes/1000000")),
            "2 200 1000000");
  std::ifstream in(file, std::ios::binary);
  const std::string body((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  ASSERT_EQ(body.size(), 1'000'000U);
  for (std::size_t i = 0; i < body.size(); ++i) {
    ASSERT_EQ(body[i], static_cast<char>('a' + i % 26)) << "at byte " << i;
  }
}

TEST(Http2Downstream, AnswersOfItsOwnToHeadEndWithTheirHeaders) {
  // RFC 9113 §8.1: a response to HEAD is HEADERS with END_STREAM; DATA on it is a
  // PROTOCOL_ERROR for the client. The content-length stays that of a GET.
  QuietProxy proxy(
      "limiters: {one: {algorithm: fixed_window, limit: 1, window: 1h}}\n"
      "routes:\n  - {name: status, match: {path: /status}, respond: {status: 200, body: "
      "\"ok\\n\"}}\n"
      "  - {name: limited, match: {path: /limited}, limiters: [one]}\n"
      "  - {name: gone, match: {path: /gone}, upstream: \"http://127.0.0.1:1\"}");
  for (const auto& [path, status] :
       std::vector<std::pair<std::string, std::string>>{{"/status", "200"},
                                                        {"/limited", "200"},
                                                        {"/limited", "429"},
                                                        {"/nope", "404"},
                                                        {"/gone", "502"}}) {
    SCOPED_TRACE(path);
    const std::string head = curl("-S --http2-prior-knowledge -I -o /dev/null -w '%{http_code}' '" +
                                  url(proxy.port(), path) + "'");
    EXPECT_EQ(head, status);  // curl's error, if any, is printed with it
  }
  EXPECT_THAT(curl("--http2-prior-knowledge -I " + url(proxy.port(), "/status")),
              HasSubstr("content-length: 3\r\n"));
}

TEST(Http2Downstream, LimitsTheStreamsOverTheLimitAndNotTheirConnection) {
  QuietProxy proxy(
      "limiters: {per-ip: {algorithm: fixed_window, limit: 2, window: 1h}}\n"
      "routes: [{name: all, limiters: [per-ip]}]");
  const json::object result = h2_peer(proxy.port(), "get --path /limited --streams 4");
  EXPECT_EQ(statuses(result), (std::map<std::int64_t, int>{{200, 2}, {429, 2}})) << shown(result);
  EXPECT_TRUE(result.at("resets").as_object().empty()) << shown(result);
  EXPECT_TRUE(result.at("goaway").is_null()) << shown(result);
  EXPECT_EQ(result.at("closed"), false) << shown(result);
  for (const auto& [id, response] : result.at("responses").as_object()) {
    const json::value& headers = response.at("headers");
    EXPECT_EQ(field(headers, "ratelimit-policy"), "\"per-ip\";q=2;w=3600") << id;
    if (response.at("status") == 429) {
      EXPECT_THAT(field(headers, "ratelimit"), StartsWith("\"per-ip\";r=0;t=")) << id;
      EXPECT_EQ(field(headers, "content-type"), "application/problem+json") << id;
      EXPECT_NE(field(headers, "retry-after"), "") << id;
      EXPECT_GT(response.at("body_bytes").as_int64(), 0) << id;
    }
  }
  EXPECT_EQ(proxy.upstream().requests(), 2);
  // HTTP/1.1 on the same port counts against the same limit.
  EXPECT_EQ(proxy.send(get("/")).result(), http::status::too_many_requests);
}

/// A duration as nghttp prints it ("+597us", "1.37ms", "1.01s"), in seconds.
double seconds_of(std::string text) {
  if (!text.empty() && text.front() == '+') {
    text.erase(0, 1);
  }
  const double number = std::stod(text);
  return text.ends_with("us") ? number / 1e6 : text.ends_with("ms") ? number / 1e3 : number;
}

/// One request of an `nghttp --stat` run: its status and when it ended.
struct Timing {
  int status = 0;
  double ended = 0;  ///< Seconds from the connection's start to the response's last byte.
};

/// nghttp's statistics table, by request path.
std::map<std::string, Timing> timings_of(const std::string& out) {
  std::map<std::string, Timing> timings;
  // The table starts at its head ("id  responseEnd ..."), after nghttp's explanations.
  const std::size_t head = out.find("\nid ");
  std::istringstream lines(head == std::string::npos ? "" : out.substr(head + 1));
  std::string line;
  std::getline(lines, line);
  while (std::getline(lines, line)) {
    std::istringstream words(line);
    std::string id, ended, started, process, size, path;
    int status = 0;
    if (words >> id >> ended >> started >> process >> status >> size >> path) {
      timings[path] = Timing{status, seconds_of(ended)};
    }
  }
  return timings;
}

TEST(Http2Downstream, HoldsADelayedStreamAndNotItsConnection) {
  QuietProxy proxy(
      "limiters:\n"
      "  shaped: {algorithm: token_bucket, rate: 2/s, burst: 1, mode: delay, max_delay: 2s}\n"
      "routes:\n"
      "  - {name: held, match: {path_prefix: /held}, limiters: [shaped]}\n"
      "  - {name: free}");
  // Three requests at once on one connection (nghttp's): one of the two to /held waits 500 ms
  // for its token; /free, on the same connection, does not wait for it.
  const std::string out =
      output_of("nghttp --stat --null-out " + url(proxy.port(), "/held/1") + " " +
                url(proxy.port(), "/held/2") + " " + url(proxy.port(), "/free") + " 2>&1");
  std::map<std::string, Timing> timings = timings_of(out);
  ASSERT_EQ(timings.size(), 3U) << out;
  for (const auto& [path, timing] : timings) {
    EXPECT_EQ(timing.status, 200) << path << "\n" << out;
  }
  const double held_first = std::min(timings["/held/1"].ended, timings["/held/2"].ended);
  const double held_second = std::max(timings["/held/1"].ended, timings["/held/2"].ended);
  EXPECT_LT(held_first, 0.3) << out;
  EXPECT_GT(held_second, 0.4) << out;
  EXPECT_LT(timings["/free"].ended, 0.3) << out;
}

TEST(Http2Downstream, AResetStreamGivesItsConcurrencyPermitBack) {
  // An upstream that takes connections and never answers: only the reset can end the request
  // before the upstream timeout.
  net::io_context io;
  const tcp::acceptor silent(io, tcp::endpoint(net::ip::make_address("127.0.0.1"), 0));
  const std::string silent_url =
      "http://127.0.0.1:" + std::to_string(silent.local_endpoint().port());
  QuietProxy proxy(
      "limiters: {one: {algorithm: concurrency, limit: 1, key: ip}}\n"
      "routes:\n"
      "  - {name: held, match: {path_prefix: /held}, limiters: [one], upstream: \"" +
          silent_url + "\"}\n  - {name: all, limiters: [one]}",
      "timeouts: {upstream: 30s}");
  const json::object result =
      h2_peer(proxy.port(), "reset-after-headers --path /held --wait-ms 100 --second-path /next");
  EXPECT_EQ(result.at("reset_sent"), true) << shown(result);
  EXPECT_EQ(result.at("first_completed_before_reset"), false) << shown(result);
  // The second GET on that connection may be decided before or after the permit is back (the
  // release follows the reset on the loop): either is right.
  EXPECT_THAT(status_of(result, "3"), ::testing::AnyOf(200, 429)) << shown(result);
  // The permit comes back, and another connection is admitted.
  EXPECT_TRUE(admin_shows(proxy.admin_port(), "/limiters/one/127.0.0.1", "\"remaining\":1"));
  EXPECT_EQ(proxy.send(get("/")).result(), http::status::ok);
}

TEST(Http2Downstream, ClosesAnIdleConnection) {
  QuietProxy proxy(kForwardAll, "timeouts: {header: 300ms, idle: 500ms}");
  const json::object result = h2_peer(proxy.port(), "idle");
  ASSERT_TRUE(result.at("seconds").is_number()) << shown(result);
  EXPECT_LT(result.at("seconds").to_number<double>(), 2.0) << shown(result);
  EXPECT_EQ(result.at("closed"), true) << shown(result);
}

TEST(Http2Downstream, ClosesAConnectionIdleAfterItsRequestsAtTheIdleTimeout) {
  QuietProxy proxy(kForwardAll, "timeouts: {header: 300ms, idle: 800ms}");
  // Neither the header timeout (a request came) nor the longer one of open streams (it is over).
  const json::object result = h2_peer(proxy.port(), "idle --after-get");
  EXPECT_EQ(status_of(result, "1"), 200) << shown(result);
  ASSERT_TRUE(result.at("seconds").is_number()) << shown(result);
  EXPECT_GT(result.at("seconds").to_number<double>(), 0.6) << shown(result);
  EXPECT_LT(result.at("seconds").to_number<double>(), 2.0) << shown(result);
}

TEST(Http2Downstream, ARefusedRequestLeavesItsConnectionsTimeoutsAlone) {
  QuietProxy proxy(kForwardAll, "timeouts: {header: 300ms, idle: 5s}");
  // The first request has a field HTTP/2 forbids: nghttp2 refuses it before its header block is
  // over. The second waits a second for /slow: the connection must not be held to the header
  // timeout meanwhile, as if that block were still coming.
  const json::object result = h2_peer(proxy.port(), "refused-then-get --path /slow");
  EXPECT_EQ(entry(result, "resets", "1"), 1) << "PROTOCOL_ERROR: " << shown(result);
  ASSERT_EQ(result.at("second_stream_id"), 3) << shown(result);
  EXPECT_EQ(status_of(result, "3"), 200) << shown(result);
  EXPECT_EQ(result.at("closed"), false) << shown(result);
  EXPECT_EQ(proxy.upstream().requests(), 1);
}

TEST(GrpcDownstream, ALimitedCallIsResourceExhaustedWithRateLimitMetadata) {
  QuietProxy proxy(
      "limiters: {calls: {algorithm: fixed_window, limit: 1, window: 1h}}\n"
      "routes: [{name: echo, match: {path_prefix: /test.Echo/}, limiters: [calls]}]");
  const json::object result = grpc_client(proxy.port(), "--method Unary --calls 2 --timeout 3");
  ASSERT_TRUE(result.at("error").is_null()) << shown(result);
  const json::array& calls = result.at("calls").as_array();
  ASSERT_EQ(calls.size(), 2U) << shown(result);
  // The first call reaches the HTTP/1.1 TestUpstream, which is no gRPC server.
  EXPECT_NE(calls[0].at("code"), "OK") << shown(result);
  EXPECT_EQ(proxy.upstream().requests(), 1);
  const json::value& limited = calls[1];
  EXPECT_EQ(limited.at("code"), "RESOURCE_EXHAUSTED") << shown(limited);
  EXPECT_EQ(limited.at("details"), "Too Many Requests") << shown(limited);
  // A trailers-only response: its fields are the call's trailing metadata.
  const json::value& trailers = limited.at("trailing_metadata");
  EXPECT_EQ(field(trailers, "ratelimit-policy"), "\"calls\";q=1;w=3600") << shown(limited);
  EXPECT_THAT(field(trailers, "ratelimit"), StartsWith("\"calls\";r=0;t=")) << shown(limited);
  EXPECT_NE(field(trailers, "retry-after"), "") << shown(limited);
}

TEST(GrpcDownstream, ACallFromADeniedNetworkIsPermissionDenied) {
  QuietProxy proxy("routes: [{name: echo, match: {path_prefix: /test.Echo/}}]",
                   "deny: [\"127.0.0.1/32\"]");
  const json::object result = grpc_client(proxy.port(), "--method Unary --timeout 3");
  ASSERT_EQ(result.at("calls").as_array().size(), 1U) << shown(result);
  const json::value& denied = result.at("calls").at(0);
  EXPECT_EQ(denied.at("code"), "PERMISSION_DENIED") << shown(denied);
  EXPECT_EQ(denied.at("details"), "Forbidden") << shown(denied);
  EXPECT_EQ(proxy.upstream().requests(), 0);
}

TEST(GrpcDownstream, ACallWithoutAValidTokenIsUnauthenticated) {
  const MintedJwts minted = mint_jwts_now();
  ASSERT_FALSE(minted.by_algorithm.empty()) << "the minting script ran";
  const TempDirectory directory("sluice-grpc-jwt");
  const std::string pem =
      directory.write("idp.pem", minted.by_algorithm.at("ES256").public_pem).string();
  QuietProxy proxy("auth: {jwt: {idp: {issuer: \"https://idp.test/\", keys: [{file: \"" + pem +
                   "\", alg: ES256}]}}}\n"
                   "routes: [{name: echo, auth: {jwt: idp}}]");
  const json::object anonymous = grpc_client(proxy.port(), "--method Unary --timeout 3");
  ASSERT_EQ(anonymous.at("calls").as_array().size(), 1U) << shown(anonymous);
  EXPECT_EQ(anonymous.at("calls").at(0).at("code"), "UNAUTHENTICATED") << shown(anonymous);
  const json::object expired =
      grpc_client(proxy.port(), "--method Unary --timeout 3 --metadata 'authorization=Bearer " +
                                    minted.cases.at("expired").second + "'");
  EXPECT_EQ(expired.at("calls").at(0).at("code"), "UNAUTHENTICATED") << shown(expired);
  EXPECT_EQ(proxy.upstream().requests(), 0);
  // A verified call goes on (to the HTTP/1.1 TestUpstream, which is no gRPC server).
  const json::object verified =
      grpc_client(proxy.port(), "--method Unary --timeout 3 --metadata 'authorization=Bearer " +
                                    minted.by_algorithm.at("ES256").token + "'");
  EXPECT_NE(verified.at("calls").at(0).at("code"), "UNAUTHENTICATED") << shown(verified);
  EXPECT_EQ(proxy.upstream().requests(), 1);
  // A plain HTTP/2 request gets the 401 of HTTP/1.1, as fields.
  const json::object plain = h2_peer(proxy.port(), "get");
  ASSERT_EQ(status_of(plain, "1"), 401) << shown(plain);
  EXPECT_EQ(field(plain.at("responses").at("1").at("headers"), "www-authenticate"), "Bearer");
}

TEST(GrpcDownstream, AnHttp2RequestThatIsNoCallGetsAPlainRefusal) {
  QuietProxy proxy("routes: [{name: all}]", "deny: [\"127.0.0.1/32\"]");
  const json::object result = h2_peer(proxy.port(), "get --header content-type:text/plain");
  ASSERT_EQ(status_of(result, "1"), 403) << shown(result);
  const json::value& response = result.at("responses").at("1");
  EXPECT_EQ(field(response.at("headers"), "content-type"), "application/problem+json");
  EXPECT_EQ(field(response.at("headers"), "grpc-status"), "");
}

/// A config's head with a cleartext and a TLS listener (test certificates).
std::string tls_head(const TestCertificates& files) {
  return "listen:\n  - \"127.0.0.1:0\"\n  - {address: \"127.0.0.1:0\", tls: {cert: " +
         files.server_cert() + ", key: " + files.server_key() +
         "}}\nadmin: \"127.0.0.1:0\"\nthreads: 2\nlog: {access: false}\n";
}

/// `curl ARGUMENTS https://localhost:PORT/`, localhost pinned to 127.0.0.1: the HTTP version
/// and status.
std::string curl_tls(unsigned short port, const TestCertificates& files,
                     const std::string& arguments) {
  const std::string p = std::to_string(port);
  return curl("--cacert " + files.ca_cert() + " --resolve localhost:" + p + ":127.0.0.1 " +
              arguments + " -o /dev/null -w '%{http_version} %{http_code}' https://localhost:" + p +
              "/");
}

TEST(Http2Tls, NegotiatesHttp2ByAlpnAndHttp11WhenAskedFor) {
  const TestCertificates files;
  ReloadableProxy proxy(kForwardAll, tls_head(files));
  const unsigned short port = proxy.server().local_endpoints().at(1).port();
  EXPECT_EQ(curl_tls(port, files, "--http2"), "2 200");
  EXPECT_EQ(curl_tls(port, files, "--http1.1"), "1.1 200");
  const json::object result = h2_peer(port, "get --tls --ca " + files.ca_cert());
  EXPECT_EQ(result.at("alpn"), "h2") << shown(result);
  EXPECT_EQ(status_of(result, "1"), 200) << shown(result);
}

TEST(Http2Tls, WithHttp2OffClientsGetHttp11) {
  const TestCertificates files;
  ReloadableProxy proxy(std::string(kForwardAll) + "\nhttp2: {enabled: false}", tls_head(files));
  const unsigned short plain = proxy.server().local_endpoints().at(0).port();
  const unsigned short tls = proxy.server().local_endpoints().at(1).port();
  EXPECT_EQ(curl_tls(tls, files, "--http2"), "1.1 200");
  // Prior knowledge on cleartext: the preface is read as an HTTP/1.1 request, and refused so.
  const json::object result = h2_peer(plain, "get");
  EXPECT_EQ(at_or_null(result, "non_h2_reply"), "HTTP/1.1 400 Bad Request") << shown(result);
  EXPECT_EQ(result.at("closed"), true) << shown(result);
  EXPECT_TRUE(result.at("responses").as_object().empty()) << shown(result);
  EXPECT_EQ(curl("-o /dev/null -w '%{http_version} %{http_code}' " + url(plain, "/")), "1.1 200");
}

TEST(Http2Protections, CountsConnectionsAndTheGoawaysThatEndedThem) {
  QuietProxy proxy(kForwardAll);
  h2_peer(proxy.port(), "continuation-flood --frames 50");
  h2_peer(proxy.port(), "data-on-stream-zero");
  EXPECT_TRUE(admin_shows(proxy.admin_port(), "/metrics", "\nsluice_http2_connections_total 2\n"));
  EXPECT_TRUE(admin_shows(proxy.admin_port(), "/metrics",
                          "\nsluice_http2_goaways_total{error=\"enhance_your_calm\"} 1\n"));
  EXPECT_TRUE(admin_shows(proxy.admin_port(), "/metrics",
                          "\nsluice_http2_goaways_total{error=\"protocol_error\"} 1\n"));
}

TEST(Http2Protections, AdvertisesAndEnforcesMaxConcurrentStreams) {
  QuietProxy proxy(kForwardAll, "http2: {max_concurrent_streams: 4}");
  // Ten at once, before the SETTINGS came: the four admitted take a second (/slow), so that all
  // ten are in while they are open.
  const json::object result = h2_peer(proxy.port(), "get --path /slow --streams 10");
  EXPECT_EQ(result.at("max_concurrent_streams"), 4) << shown(result);
  EXPECT_EQ(result.at("server_settings").at("MAX_HEADER_LIST_SIZE"), 16384) << shown(result);
  EXPECT_EQ(statuses(result), (std::map<std::int64_t, int>{{200, 4}})) << shown(result);
  const json::object& resets = result.at("resets").as_object();
  EXPECT_EQ(resets.size(), 6U) << shown(result);
  for (const auto& [id, code] : resets) {
    EXPECT_EQ(code, 7) << "REFUSED_STREAM for stream " << id;
  }
  EXPECT_TRUE(result.at("goaway").is_null()) << shown(result);
  // Kept within the limit, ten go through.
  const json::object polite = h2_peer(proxy.port(), "get --streams 10 --respect-limit");
  EXPECT_EQ(statuses(polite), (std::map<std::int64_t, int>{{200, 10}})) << shown(polite);
}

/// One abuse of the protocol, what the proxy must answer, and a name for it.
struct Abuse {
  const char* name;
  const char* arguments;
  std::function<void(const json::object&)> check;
};

void PrintTo(const Abuse& abuse, std::ostream* out) { *out << abuse.name; }

/// A GOAWAY with `code`, or at least a closed connection when `or_closed`.
std::function<void(const json::object&)> goaway(std::int64_t code, bool or_closed = false) {
  return [code, or_closed](const json::object& result) {
    const json::value& away = result.at("goaway");
    if (or_closed && away.is_null()) {
      EXPECT_EQ(result.at("closed"), true) << shown(result);
      return;
    }
    ASSERT_FALSE(away.is_null()) << shown(result);
    EXPECT_EQ(away.at("error_code"), code) << shown(result);
  };
}

/// A flood of frames that each want an acknowledgement: ended with GOAWAY ENHANCE_YOUR_CALM
/// (or a close) once more than 1000 acknowledgements wait to go out; or, when the proxy sent
/// them as fast as it read the flood (as it may when it is slow to read, under a sanitizer), all
/// of them acknowledged, the last probe included: never a growing queue or a stuck connection.
std::function<void(const json::object&)> flood_answered() {
  return [](const json::object& result) {
    if (result.at("probe_acked") == true) {
      EXPECT_TRUE(result.at("goaway").is_null()) << shown(result);
      return;
    }
    goaway(11, true)(result);
  };
}

class Http2Abuse : public testing::TestWithParam<Abuse> {};

TEST_P(Http2Abuse, IsAnsweredAndOtherConnectionsAreServed) {
  QuietProxy proxy(kForwardAll);
  const json::object result = h2_peer(proxy.port(), GetParam().arguments);
  ASSERT_TRUE(result.contains("scenario")) << shown(result);
  GetParam().check(result);
  // Nothing of it reaches a fresh connection, in either protocol.
  const auto h1 = proxy.send(get("/after"));
  EXPECT_EQ(h1.result(), http::status::ok);
  const json::object h2 = h2_peer(proxy.port(), "get --path /after");
  EXPECT_EQ(statuses(h2), (std::map<std::int64_t, int>{{200, 1}})) << shown(h2);
}

INSTANTIATE_TEST_SUITE_P(
    Http2Protections, Http2Abuse,
    testing::Values(
        // CVE-2023-44487: past its token bucket of resets, nghttp2 itself goes away with
        // INTERNAL_ERROR.
        Abuse{"rapid_reset", "rapid-reset --count 3000", goaway(2)},
        Abuse{"continuation_flood", "continuation-flood --frames 1000", goaway(11, true)},
        Abuse{"settings_flood", "settings-flood --count 100000 --rcvbuf 4096", flood_answered()},
        Abuse{"ping_flood", "ping-flood --count 100000 --rcvbuf 4096", flood_answered()},
        Abuse{"data_on_stream_zero", "data-on-stream-zero", goaway(1)},
        Abuse{"window_overflow", "window-overflow --via window-update", goaway(3)},
        Abuse{"big_headers", "big-headers --bytes 40000",
              [](const json::object& result) {
                EXPECT_EQ(status_of(result, "1"), 431) << shown(result);
                EXPECT_TRUE(result.at("goaway").is_null()) << shown(result);
                EXPECT_EQ(result.at("closed"), false) << shown(result);
              }},
        Abuse{"hpack_bomb", "hpack-bomb --count 1000",
              [](const json::object& result) {
                EXPECT_EQ(result.at("planted"), true) << shown(result);
                EXPECT_EQ(status_of(result, "1"), 200) << shown(result);
                EXPECT_EQ(status_of(result, "3"), 431) << shown(result);
                EXPECT_TRUE(result.at("goaway").is_null()) << shown(result);
              }},
        // Not HTTP/2's preface: read as HTTP/1.1, which it is not either.
        Abuse{"bad_preface", "bad-preface",
              [](const json::object& result) {
                EXPECT_EQ(result.at("closed"), true) << shown(result);
                EXPECT_EQ(at_or_null(result, "non_h2_reply"), "HTTP/1.1 400 Bad Request")
                    << shown(result);
              }}),
    [](const testing::TestParamInfo<Abuse>& abuse) { return std::string(abuse.param.name); });

}  // namespace
}  // namespace sluice::test
