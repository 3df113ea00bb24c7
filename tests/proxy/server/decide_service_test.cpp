// The decision service's listener (SPEC §11) over real sockets: forward-auth checks over
// HTTP/1.1 and h2c decided as the requests they describe, the client address trusted only
// through trusted_proxies, and nothing ever forwarded.
#include <gtest/gtest.h>

#include <string>

#include "tests/support/proxy_fixture.hpp"
#include "tests/support/shell.hpp"
#include "tests/support/test_certificates.hpp"

namespace sluice::test {
namespace {

constexpr std::string_view kPerClient =
    "limiters: {per-ip: {algorithm: sliding_log, limit: 2, window: 1m}}\n"
    "routes: [{name: api, match: {path_prefix: /api}, limiters: [per-ip]}]";

/// A check for GET `uri` from `client`, as Traefik sends it.
http::request<http::string_body> check(const std::string& uri, const std::string& client) {
  http::request<http::string_body> request{http::verb::get, "/auth", 11};
  request.set("X-Forwarded-Method", "GET");
  request.set("X-Forwarded-Uri", uri);
  request.set("X-Forwarded-Host", "api.test");
  request.set("X-Forwarded-Proto", "https");
  request.set("X-Forwarded-For", client);
  return request;
}

class DecideService : public ::testing::Test {
 protected:
  explicit DecideService(const std::string& extra = "")
      : proxy_(std::string(kPerClient), "decide: \"127.0.0.1:0\"\n" + extra) {}

  unsigned short decide_port() { return proxy_.server().decide_endpoint().port(); }
  http::response<http::string_body> ask(const std::string& uri, const std::string& client) {
    return send_request(decide_port(), check(uri, client));
  }

  ProxyFixture proxy_;
};

TEST_F(DecideService, AdmitsWith200AndItsLimitFieldsThenRefusesWith429) {
  auto first = ask("/api/x", "203.0.113.1");
  EXPECT_EQ(first.result_int(), 200);
  EXPECT_EQ(first["RateLimit"], "\"per-ip\";r=1;t=60");
  EXPECT_EQ(first["X-RateLimit-Remaining"], "1");
  EXPECT_EQ(ask("/api/y", "203.0.113.1").result_int(), 200);
  auto third = ask("/api/z", "203.0.113.1");
  EXPECT_EQ(third.result_int(), 429);
  EXPECT_EQ(third["Retry-After"], "60");
  EXPECT_EQ(third[http::field::content_type], "application/problem+json");
  EXPECT_NE(third.body().find("\"violated-policies\":[\"per-ip\"]"), std::string::npos);
  // Outside every limited route: admitted, without limit fields.
  auto other = ask("/health", "203.0.113.1");
  EXPECT_EQ(other.result_int(), 200);
  EXPECT_EQ(other["RateLimit"], "");
  EXPECT_EQ(proxy_.upstream().requests(), 0);  // nothing is forwarded
}

TEST_F(DecideService, TrustsNoForwardedClientAddressWithoutTrustedProxies) {
  // The gateway (127.0.0.1) is the client: two forwarded addresses share its budget.
  EXPECT_EQ(ask("/api/x", "203.0.113.1").result_int(), 200);
  EXPECT_EQ(ask("/api/x", "203.0.113.2").result_int(), 200);
  EXPECT_EQ(ask("/api/x", "203.0.113.3").result_int(), 429);
}

class DecideBehindTrustedGateway : public DecideService {
 protected:
  DecideBehindTrustedGateway() : DecideService("trusted_proxies: [127.0.0.1/32]\n") {}
};

TEST_F(DecideBehindTrustedGateway, DecidesEachForwardedClientOnItsOwn) {
  EXPECT_EQ(ask("/api/x", "203.0.113.1").result_int(), 200);
  EXPECT_EQ(ask("/api/x", "203.0.113.1").result_int(), 200);
  EXPECT_EQ(ask("/api/x", "203.0.113.1").result_int(), 429);
  EXPECT_EQ(ask("/api/x", "203.0.113.2").result_int(), 200);
}

TEST_F(DecideService, Answers400NamingFieldsThatContradictEachOther) {
  auto request = check("/api/x", "203.0.113.1");
  request.set("X-Original-URI", "/api/other");
  auto answer = send_request(decide_port(), request);
  EXPECT_EQ(answer.result_int(), 400);
  EXPECT_NE(answer.body().find("X-Forwarded-Uri and X-Original-URI disagree"), std::string::npos)
      << answer.body();
}

TEST_F(DecideService, DecidesChecksSentOverH2c) {
  const std::string curl =
      "curl -s -o /dev/null -w '%{http_code} %{http_version}\\n' "
      "--http2-prior-knowledge -H 'X-Forwarded-Uri: /api/x' "
      "http://127.0.0.1:" +
      std::to_string(decide_port()) + "/auth";
  EXPECT_EQ(output_of(curl), "200 2\n");
  EXPECT_EQ(output_of(curl), "200 2\n");
  EXPECT_EQ(output_of(curl), "429 2\n");
  EXPECT_EQ(proxy_.upstream().requests(), 0);
}

TEST_F(DecideService, LeavesTheProxyListenerAsItWas) {
  EXPECT_EQ(proxy_.send(get("/api/x")).result_int(), 200);
  EXPECT_EQ(proxy_.upstream().requests(), 1);
}

TEST(DecideOverTls, AnswersChecksOverHttp11AndH2) {
  const TestCertificates files;
  ProxyFixture proxy(std::string(kPerClient),
                     "decide: {address: \"127.0.0.1:0\", tls: {cert: " + files.server_cert() +
                         ", key: " + files.server_key() + "}}\n");
  const std::string port = std::to_string(proxy.server().decide_endpoint().port());
  const auto curl = [&](const std::string& protocol) {
    return output_of("curl -s --max-time 5 -o /dev/null -w '%{http_code} %{http_version}\\n' " +
                     protocol + " --cacert " + files.ca_cert() + " --resolve localhost:" + port +
                     ":127.0.0.1 -H 'X-Forwarded-Uri: /api/x' https://localhost:" + port + "/auth");
  };
  EXPECT_EQ(curl("--http1.1"), "200 1.1\n");
  EXPECT_EQ(curl("--http2"), "200 2\n");  // ALPN h2
  EXPECT_EQ(curl("--http2"), "429 2\n");
  EXPECT_EQ(proxy.upstream().requests(), 0);
}

}  // namespace
}  // namespace sluice::test
