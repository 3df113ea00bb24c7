// HTTP/2 upstreams (h2c://, h2://) through the whole proxy, over real sockets: a real gRPC
// server and client (tests/support/grpc_peer.py, grpcio with generic handlers) with sluice
// between them, and a second sluice with a TLS listener as an h2:// upstream.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <boost/json.hpp>
#include <chrono>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>

#include "tests/support/grpc_upstream.hpp"
#include "tests/support/proxy_fixture.hpp"
#include "tests/support/reloadable_proxy.hpp"
#include "tests/support/shell.hpp"
#include "tests/support/temp_directory.hpp"
#include "tests/support/test_certificates.hpp"
#include "tests/support/test_upstream.hpp"

namespace sluice::test {
namespace {

namespace json = boost::json;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

/// Routes for a proxy in front of `grpc`: /test.Echo/ calls to it, through `limiters`.
std::string grpc_routes(const GrpcUpstream& grpc, const std::string& limiters,
                        const std::string& limiter_names) {
  return limiters + "routes:\n  - name: grpc\n    match: {path_prefix: /test.Echo/}\n" +
         "    upstream: \"h2c://127.0.0.1:" + std::to_string(grpc.port()) + "\"\n" +
         "    limiters: [" + limiter_names + "]\n  - name: other\n";
}

/// The calls grpc_peer.py's client reports.
json::array calls_of(const std::string& output) {
  const json::value parsed = json::parse(output);
  return parsed.at("calls").as_array();
}

std::string code_of(const json::value& call) {
  return json::value_to<std::string>(call.at("code"));
}

std::vector<std::string> responses_of(const json::value& call) {
  return json::value_to<std::vector<std::string>>(call.at("responses"));
}

/// The value of metadata `key` (trailing, or initial), or "".
std::string metadata(const json::value& call, const std::string& key,
                     const char* which = "trailing_metadata") {
  for (const json::value& pair : call.at(which).as_array()) {
    if (json::value_to<std::string>(pair.as_array().at(0)) == key) {
      return json::value_to<std::string>(pair.as_array().at(1));
    }
  }
  return "";
}

TEST(Http2Upstream, UnaryAndStreamingCallsPassWithTheirTrailers) {
  GrpcUpstream grpc;
  ProxyFixture proxy(grpc_routes(grpc, "", ""));
  const json::array unary =
      calls_of(grpc_call(proxy.port(), "--method Unary --message ping --calls 2"));
  ASSERT_EQ(unary.size(), 2U);
  for (const json::value& call : unary) {
    EXPECT_EQ(code_of(call), "OK");
    EXPECT_THAT(responses_of(call), ElementsAre("ping"));
    EXPECT_EQ(metadata(call, "echo-trailer"), "yes") << "the upstream's trailers reach the client";
  }
  const json::array server_stream =
      calls_of(grpc_call(proxy.port(), "--method ServerStream --count 4"));
  EXPECT_EQ(code_of(server_stream.at(0)), "OK");
  EXPECT_THAT(responses_of(server_stream.at(0)),
              ElementsAre("item-0", "item-1", "item-2", "item-3"));
  const json::array client_stream =
      calls_of(grpc_call(proxy.port(), "--method ClientStream --count 5"));
  EXPECT_THAT(responses_of(client_stream.at(0)), ElementsAre("count=5"));
  const json::array bidi =
      calls_of(grpc_call(proxy.port(), "--method Bidi --message echo --count 3"));
  EXPECT_EQ(code_of(bidi.at(0)), "OK");
  EXPECT_THAT(responses_of(bidi.at(0)), ElementsAre("echo", "echo", "echo"));
}

TEST(Http2Upstream, ALimitedCallIsResourceExhaustedWithTheLimitInItsMetadata) {
  GrpcUpstream grpc;
  ProxyFixture proxy(grpc_routes(
      grpc, "limiters:\n  calls: {algorithm: fixed_window, limit: 2, window: 1h, key: ip}\n",
      "calls"));
  const json::array calls =
      calls_of(grpc_call(proxy.port(), "--method Unary --message ping --calls 3"));
  ASSERT_EQ(calls.size(), 3U);
  EXPECT_EQ(code_of(calls.at(0)), "OK");
  EXPECT_EQ(code_of(calls.at(1)), "OK");
  EXPECT_EQ(metadata(calls.at(1), "x-ratelimit-remaining", "initial_metadata"), "0")
      << "a forwarded call carries the limit fields too";
  EXPECT_EQ(code_of(calls.at(2)), "RESOURCE_EXHAUSTED");
  EXPECT_EQ(json::value_to<std::string>(calls.at(2).at("details")), "Too Many Requests");
  EXPECT_EQ(metadata(calls.at(2), "ratelimit-policy"), "\"calls\";q=2;w=3600");
  EXPECT_EQ(metadata(calls.at(2), "x-ratelimit-remaining"), "0");
}

TEST(Http2Upstream, ADeniedCallIsPermissionDenied) {
  GrpcUpstream grpc;
  ProxyFixture proxy(grpc_routes(grpc, "deny: [\"127.0.0.0/8\"]\n", ""));
  const json::array calls = calls_of(grpc_call(proxy.port(), "--method Unary"));
  EXPECT_EQ(code_of(calls.at(0)), "PERMISSION_DENIED");
}

TEST(Http2Upstream, TheCallsDeadlineBoundsTheWaitForItsUpstream) {
  const TempDirectory directory("sluice-grpc");
  const std::string events = (directory.path() / "events").string();
  GrpcUpstream grpc(events);
  ProxyFixture proxy(grpc_routes(grpc, "", ""));
  const auto started = std::chrono::steady_clock::now();
  const json::array calls =
      calls_of(grpc_call(proxy.port(), "--method Slow --message 5 --timeout 0.3"));
  EXPECT_EQ(code_of(calls.at(0)), "DEADLINE_EXCEEDED");
  EXPECT_LT(std::chrono::steady_clock::now() - started, std::chrono::seconds(3));
  // The proxy cancels its own call upstream: the server sees it end early.
  std::string seen;
  for (int i = 0; i < 100 && seen.find("cancelled") == std::string::npos; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    std::ifstream file(events);
    seen.assign(std::istreambuf_iterator<char>(file), {});
  }
  EXPECT_THAT(seen, HasSubstr("cancelled"));
}

TEST(Http2Upstream, ACancelledCallGivesItsConcurrencyPermitBack) {
  GrpcUpstream grpc;
  ProxyFixture proxy(
      grpc_routes(grpc, "limiters:\n  one: {algorithm: concurrency, limit: 1, key: ip}\n", "one"));
  const json::array cancelled =
      calls_of(grpc_call(proxy.port(), "--method Slow --message 5 --cancel-after-ms 200"));
  EXPECT_EQ(code_of(cancelled.at(0)), "CANCELLED");
  // The permit comes back when the proxy sees the reset: the next call is admitted.
  std::string code;
  for (int i = 0; i < 50 && code != "OK"; ++i) {
    code = code_of(calls_of(grpc_call(proxy.port(), "--method Unary")).at(0));
  }
  EXPECT_EQ(code, "OK");
}

TEST(Http2Upstream, AnUnreachableUpstreamIsUnavailable) {
  ProxyFixture proxy("routes:\n  - name: grpc\n    upstream: \"h2c://127.0.0.1:1\"\n");
  const json::array calls = calls_of(grpc_call(proxy.port(), "--method Unary"));
  EXPECT_EQ(code_of(calls.at(0)), "UNAVAILABLE");
}

TEST(Http2Upstream, AnH2UpstreamSpeaksHttp2OverTlsAndIsVerified) {
  // The upstream is a second sluice: a TLS listener that speaks HTTP/2 (ALPN h2), in front of
  // its HTTP/1.1 TestUpstream, which echoes the request.
  const TestCertificates files;
  const std::string head =
      "listen:\n  - {address: \"127.0.0.1:0\", tls: {cert: " + files.server_cert() +
      ", key: " + files.server_key() + "}}\nadmin: \"\"\nthreads: 1\nlog: {access: false}\n";
  ReloadableProxy tls_upstream("routes: [{name: all}]\n", head);
  const std::string port = std::to_string(tls_upstream.server().local_endpoints().at(0).port());
  ProxyFixture outer("upstream_tls: {ca: " + files.ca_cert() +
                     ", server_name: localhost}\nroutes:\n  - name: all\n    upstream: "
                     "\"h2://127.0.0.1:" +
                     port + "\"\n");
  // An HTTP/2 client and an HTTP/1.1 one: both reach the HTTP/2 upstream.
  for (const std::string protocol : {"--http2-prior-knowledge", "--http1.1"}) {
    const std::string out = output_of("curl -s --max-time 5 " + protocol +
                                      " -d hello http://127.0.0.1:" + std::to_string(outer.port()) +
                                      "/through?x=1 -w '\\n%{http_code} %{http_version}'");
    EXPECT_THAT(out, HasSubstr("POST /through?x=1\n")) << protocol << ": the innermost's echo";
    EXPECT_THAT(out, HasSubstr("X-Forwarded-Proto: https")) << "it came over TLS";
    EXPECT_THAT(out, HasSubstr("body 5 " + std::to_string(TestUpstream::checksum("hello"))));
    EXPECT_THAT(out, HasSubstr(protocol == "--http1.1" ? "\n200 1.1" : "\n200 2"));
  }
}

}  // namespace
}  // namespace sluice::test
