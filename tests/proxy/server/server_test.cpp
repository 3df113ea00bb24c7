// The proxy over real sockets: a real upstream (TestUpstream), the Server on 127.0.0.1:0, and a
// client speaking HTTP/1.1 (Beast, or raw bytes for malformed requests).
#include "proxy/server/server.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <memory>
#include <string>
#include <thread>

#include "proxy/http/http1_connection.hpp"
#include "tests/support/eventually.hpp"
#include "tests/support/minted_jwts.hpp"
#include "tests/support/proxy_fixture.hpp"
#include "tests/support/temp_directory.hpp"

namespace sluice::test {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

TEST(Proxy, ForwardsWithForwardingHeadersAndWithoutHopByHopOnes) {
  ProxyFixture proxy("routes: [{name: all}]");
  auto request = get("/api/x?page=2");
  request.set(http::field::connection, "keep-alive, X-Hop");
  request.set("X-Hop", "secret-to-this-hop");
  request.set("X-Keep", "end-to-end");
  const auto response = proxy.send(request);
  EXPECT_EQ(response.result(), http::status::ok);
  EXPECT_THAT(response.body(), HasSubstr("GET /api/x?page=2\n"));
  EXPECT_THAT(response.body(), HasSubstr("X-Forwarded-For: 127.0.0.1\n"));
  EXPECT_THAT(response.body(), HasSubstr("X-Forwarded-Proto: http\n"));
  EXPECT_THAT(response.body(), HasSubstr("X-Forwarded-Host: api.test\n"));
  EXPECT_THAT(response.body(), HasSubstr("X-Request-Id: "));
  EXPECT_THAT(response.body(), HasSubstr("X-Keep: end-to-end\n"));
  EXPECT_THAT(response.body(), Not(HasSubstr("X-Hop")));
}

/// A provider that verifies PyJWT's ES256 tokens (a PEM key in `directory`), a route that
/// requires them, its limit keyed on the caller, and the caller's id sent upstream.
std::string verifying_config(const TempDirectory& directory, const MintedJwts& minted) {
  const std::string pem =
      directory.write("idp.pem", minted.by_algorithm.at("ES256").public_pem).string();
  return "auth:\n  jwt:\n    idp:\n      issuer: \"https://idp.test/\"\n"
         "      keys: [{file: \"" +
         pem +
         "\", alg: ES256}]\n      leeway: 0s\n"
         "      claims_to_headers: {sub: X-User-Id, org.id: X-Org, roles: X-Roles}\n"
         "limiters: {per-user: {algorithm: fixed_window, limit: 1, window: 1h, key: \"jwt:sub\"}}\n"
         "routes: [{name: api, auth: {jwt: idp}, limiters: [per-user]}]";
}

TEST(Proxy, VerifiesTheCallersTokenAndSendsItsClaimsUpstream) {
  // Tokens valid for an hour from now: the proxy verifies at its own clock.
  const MintedJwts minted = mint_jwts_now();
  ASSERT_FALSE(minted.by_algorithm.empty()) << "the minting script ran";
  const TempDirectory directory("sluice-jwt");
  ProxyFixture proxy(verifying_config(directory, minted));

  auto request = get("/api/x");
  request.set(http::field::authorization, "Bearer " + minted.by_algorithm.at("ES256").token);
  request.set("X-User-Id", "mallory");  // a client's copy never reaches the upstream
  request.set("x-org", "evil");
  const auto admitted = proxy.send(request);
  EXPECT_EQ(admitted.result(), http::status::ok);
  EXPECT_THAT(admitted.body(), HasSubstr("X-User-Id: alice\n"));
  EXPECT_THAT(admitted.body(), HasSubstr("X-Org: acme\n"));
  EXPECT_THAT(admitted.body(), Not(HasSubstr("mallory")));
  EXPECT_THAT(admitted.body(), Not(HasSubstr("evil")));
  EXPECT_THAT(admitted.body(), Not(HasSubstr("X-Roles")));  // a claim the token lacks
  EXPECT_THAT(std::string(admitted["RateLimit"]), ::testing::StartsWith("\"per-user\";r=0;t="));

  // Another token of the same caller: the same count.
  request.set(http::field::authorization, "Bearer " + minted.cases.at("alice_again").second);
  EXPECT_EQ(proxy.send(request).result(), http::status::too_many_requests);

  const auto missing = proxy.send(get("/api/x"));
  EXPECT_EQ(missing.result(), http::status::unauthorized);
  EXPECT_EQ(missing[http::field::www_authenticate], "Bearer");
  EXPECT_EQ(missing[http::field::content_type], "application/problem+json");
  EXPECT_EQ(missing.body(), R"({"type":"about:blank","title":"Unauthorized","status":401,)"
                            R"("detail":"a token is required","check":"missing"})");

  const std::string expired = minted.cases.at("expired").second;
  request.set(http::field::authorization, "Bearer " + expired);
  const auto refused = proxy.send(request);
  EXPECT_EQ(refused.result(), http::status::unauthorized);
  EXPECT_EQ(refused[http::field::www_authenticate],
            "Bearer error=\"invalid_token\", error_description=\"expired\"");
  EXPECT_THAT(refused.body(), HasSubstr(R"("check":"expired")"));
  EXPECT_THAT(refused.body(), Not(HasSubstr(expired.substr(0, 20))));  // never echoed
  EXPECT_EQ(proxy.upstream().requests(), 1);
}

TEST(Proxy, GivesEveryRequestItsOwnRequestId) {
  ProxyFixture proxy("routes: [{name: all}]");
  const ::testing::Matcher<std::string> kOneId =
      ::testing::ContainsRegex("X-Request-Id: [0-9a-f]{32}\n");
  const auto first = proxy.send(get("/"));
  const auto second = proxy.send(get("/"));
  EXPECT_THAT(first.body(), kOneId);
  EXPECT_THAT(second.body(), kOneId);
  const auto id_of = [](const std::string& body) {
    const std::size_t at = body.find("X-Request-Id: ");
    return at == std::string::npos ? std::string() : body.substr(at, 46);
  };
  EXPECT_NE(id_of(first.body()), id_of(second.body()));
}

TEST(Proxy, StreamsLargeAndChunkedBodiesIntact) {
  ProxyFixture proxy("routes: [{name: all}]");
  http::request<http::string_body> upload{http::verb::post, "/upload", 11};
  upload.body() = std::string(3 * 1024 * 1024 + 17, 'x');
  for (std::size_t i = 0; i < upload.body().size(); i += 4099) {
    upload.body()[i] = static_cast<char>('a' + i % 26);
  }
  std::uint64_t checksum = 0;
  for (const char c : upload.body()) {
    checksum = checksum * 31 + static_cast<unsigned char>(c);
  }
  const auto response = proxy.send(upload);
  EXPECT_THAT(response.body(), HasSubstr("body " + std::to_string(upload.body().size()) + " " +
                                         std::to_string(checksum) + "\n"));
  const std::string reply = proxy.send_raw(
      "POST /chunked HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n"
      "5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n");
  EXPECT_THAT(reply, HasSubstr("HTTP/1.1 200 OK"));
  EXPECT_THAT(reply, HasSubstr("body 11 "));
  EXPECT_THAT(reply, HasSubstr("Transfer-Encoding: chunked"));  // re-chunked to the upstream
}

TEST(Proxy, AnswersLimitedRequestsWith429AndRateLimitHeaders) {
  ProxyFixture proxy(
      "limiters:\n  per-ip: {algorithm: fixed_window, limit: 2, window: 1h}\n"
      "routes: [{name: all, limiters: [per-ip]}]");
  const auto first = proxy.send(get("/"));
  EXPECT_EQ(first.result(), http::status::ok);
  EXPECT_EQ(first["RateLimit-Policy"], "\"per-ip\";q=2;w=3600");
  EXPECT_THAT(std::string(first["RateLimit"]), HasSubstr("\"per-ip\";r=1;t="));
  EXPECT_EQ(first["X-RateLimit-Remaining"], "1");
  proxy.send(get("/"));
  const auto limited = proxy.send(get("/"));
  EXPECT_EQ(limited.result(), http::status::too_many_requests);
  EXPECT_EQ(limited[http::field::content_type], "application/problem+json");
  EXPECT_EQ(limited.body(),
            "{\"type\":\"https://iana.org/assignments/http-problem-types#quota-exceeded\","
            "\"title\":\"Too Many Requests\",\"status\":429,\"violated-policies\":[\"per-ip\"]}");
  EXPECT_FALSE(limited[http::field::retry_after].empty());
  EXPECT_EQ(proxy.upstream().requests(), 2);  // the limited one never reached it
}

TEST(Proxy, AnswersNoRouteDeniedAndRespondRoutesItself) {
  ProxyFixture proxy(
      "routes:\n  - {name: status, match: {path: /status}, respond: {status: 200, body: "
      "\"ok\\n\"}}\n"
      "  - {name: api, match: {path_prefix: /api/}}");
  const auto status = proxy.send(get("/status"));
  EXPECT_EQ(status.result(), http::status::ok);
  EXPECT_EQ(status.body(), "ok\n");
  const auto missing = proxy.send(get("/nope"));
  EXPECT_EQ(missing.result(), http::status::not_found);
  EXPECT_EQ(missing[http::field::content_type], "application/problem+json");
  EXPECT_EQ(proxy.upstream().requests(), 0);

  ProxyFixture denied("routes: [{name: all}]", "deny: [\"127.0.0.0/8\"]");
  EXPECT_EQ(denied.send(get("/")).result(), http::status::forbidden);
}

TEST(Proxy, KeepsConnectionsAlive) {
  ProxyFixture proxy("routes: [{name: all}]");
  net::io_context io;
  beast::tcp_stream stream(io);
  stream.connect(tcp::endpoint(net::ip::make_address("127.0.0.1"), proxy.port()));
  beast::flat_buffer buffer;
  for (int i = 0; i < 3; ++i) {
    auto request = get("/again/" + std::to_string(i));
    request.set(http::field::host, "a");
    http::write(stream, request);
    http::response<http::string_body> response;
    http::read(stream, buffer, response);
    EXPECT_EQ(response.result(), http::status::ok);
    EXPECT_TRUE(response.keep_alive());
    EXPECT_THAT(response.body(), HasSubstr("/again/" + std::to_string(i)));
  }
}

TEST(Proxy, AnswersPipelinedRequestsInOrder) {
  ProxyFixture proxy("routes: [{name: all}]");
  const std::string reply = proxy.send_raw(
      "GET /one HTTP/1.1\r\nHost: a\r\n\r\nGET /two HTTP/1.1\r\nHost: a\r\n\r\n"
      "GET /three HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n");
  const auto one = reply.find("GET /one");
  const auto two = reply.find("GET /two");
  const auto three = reply.find("GET /three");
  ASSERT_NE(three, std::string::npos) << reply;
  EXPECT_LT(one, two);
  EXPECT_LT(two, three);
}

TEST(Proxy, Answers502ForADeadUpstreamAnd504ForASlowOne) {
  ProxyFixture proxy(
      "routes:\n  - {name: dead, match: {path: /dead}, upstream: \"http://127.0.0.1:1\"}\n"
      "  - {name: all}",
      "timeouts: {upstream: 300ms}");
  EXPECT_EQ(proxy.send(get("/dead")).result(), http::status::bad_gateway);
  EXPECT_EQ(proxy.send(get("/slow")).result(), http::status::gateway_timeout);
}

TEST(Proxy, RefusesMalformedAndOversizedRequests) {
  ProxyFixture proxy("routes: [{name: all}]");
  EXPECT_THAT(proxy.send_raw("NOT HTTP AT ALL\r\n\r\n"), HasSubstr("HTTP/1.1 400 Bad Request"));
  EXPECT_THAT(proxy.send_raw("GET / HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\nContent-Length: 7"
                             "\r\n\r\nhello"),
              HasSubstr("HTTP/1.1 400 Bad Request"));
  EXPECT_THAT(proxy.send_raw("GET / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n"
                             "zz\r\nhello\r\n0\r\n\r\n"),
              Not(HasSubstr("HTTP/1.1 200")));
  EXPECT_THAT(
      proxy.send_raw("GET / HTTP/1.1\r\nHost: a\r\nX-Big: " + std::string(20000, 'b') + "\r\n\r\n"),
      HasSubstr("HTTP/1.1 431 Request Header Fields Too Large"));
  EXPECT_EQ(proxy.upstream().requests(), 0);
}

TEST(Proxy, DrainsInFlightRequestsOnStop) {
  ProxyFixture proxy("routes: [{name: all}]");
  std::thread stopper([&] {
    // Stop once the request is in flight: the upstream has it and answers in a second.
    while (proxy.upstream().requests() == 0) {
      std::this_thread::yield();
    }
    proxy.server().stop(std::chrono::seconds(5));
  });
  const auto response = proxy.send(get("/slow"));  // in flight when the stop begins
  stopper.join();
  EXPECT_EQ(response.result(), http::status::ok);
}

TEST(Proxy, GivesEveryHeadTheHeaderTimeoutFromItsFirstByte) {
  ProxyFixture proxy(
      "timeouts: {header: 300ms, idle: 20s}\n"
      "routes: [{name: all, respond: {status: 204}}]");
  for (const bool kept_alive : {false, true}) {
    RawClient client(proxy.port());
    if (kept_alive) {  // a quick first request, then a slow second head
      client.write("GET / HTTP/1.1\r\nHost: a\r\n\r\n");
      ASSERT_NE(client.read_until("\r\n\r\n").find("204"), std::string::npos);
    }
    const auto started = std::chrono::steady_clock::now();
    client.write("GET / HTTP/1.1\r\nHo");
    client.read_until("");  // to the end: the proxy closes it
    const auto took = std::chrono::steady_clock::now() - started;
    EXPECT_GE(took, std::chrono::milliseconds(250)) << "kept alive: " << kept_alive;
    EXPECT_LT(took, std::chrono::seconds(5)) << "kept alive: " << kept_alive;
  }
}

TEST(Proxy, ClosesIdleKeepAliveConnectionsAtOnceOnStop) {
  ProxyFixture proxy("routes: [{name: all}]");
  net::io_context io;
  beast::tcp_stream idle(io);
  idle.connect(tcp::endpoint(net::ip::make_address("127.0.0.1"), proxy.port()));
  auto request = get("/");
  request.set(http::field::host, "a");
  http::write(idle, request);
  beast::flat_buffer buffer;
  http::response<http::string_body> response;
  http::read(idle, buffer, response);
  ASSERT_TRUE(response.keep_alive());  // the connection now waits for its next request
  const auto started = std::chrono::steady_clock::now();
  proxy.server().stop(std::chrono::seconds(30));
  EXPECT_LT(std::chrono::steady_clock::now() - started, std::chrono::seconds(5));
  EXPECT_EQ(proxy.server().open_connections(), 0U);
}

/// Whether `count` client connections are parked within 5 s (a quiet keep-alive connection is
/// parked at its loop's next sweep, every kParkingInterval).
bool parked_within_seconds(ProxyFixture& proxy, std::size_t count) {
  return holds_within(std::chrono::seconds(5),
                      [&] { return proxy.server().parked_connections() == count; });
}

TEST(Proxy, ServesAParkedConnectionsNextRequestsWholeTrickledAndPipelined) {
  ProxyFixture proxy("routes: [{name: all}]");
  RawClient client(proxy.port());
  const std::string request = "GET /one HTTP/1.1\r\nHost: a\r\n\r\n";
  client.write(request);
  EXPECT_THAT(client.read_until("GET /one\n"), HasSubstr("200 OK"));
  ASSERT_TRUE(parked_within_seconds(proxy, 1));  // it waits without its request state
  EXPECT_THAT(proxy.send(get("/metrics"), true).body(),
              HasSubstr("\nsluice_parked_connections 1\n"));
  client.write(request);
  EXPECT_THAT(client.read_until("GET /one\n"), HasSubstr("200 OK"));
  ASSERT_TRUE(parked_within_seconds(proxy, 1));
  client.write("GE");  // the first bytes wake it; the rest comes later
  ASSERT_TRUE(parked_within_seconds(proxy, 0));
  // Part of a head is in: the sweeps leave it alone (a sleep: proving that nothing happens).
  std::this_thread::sleep_for(3 * sluice::http::kParkingInterval);
  EXPECT_EQ(proxy.server().parked_connections(), 0U);
  client.write("T /two HTTP/1.1\r\nHost: a\r\n\r\n");
  EXPECT_THAT(client.read_until("GET /two\n"), HasSubstr("200 OK"));
  ASSERT_TRUE(parked_within_seconds(proxy, 1));
  client.write(request + "GET /three HTTP/1.1\r\nHost: a\r\n\r\n");  // answered in order
  std::string both = client.read_until("GET /one\n");
  if (both.find("GET /three\n") == std::string::npos) {
    both += client.read_until("GET /three\n");
  }
  EXPECT_LT(both.find("GET /one\n"), both.find("GET /three\n"));
}

TEST(Proxy, ClosesAParkedConnectionOnceIdleForTheIdleTimeout) {
  ProxyFixture proxy("timeouts: {idle: 400ms}\nroutes: [{name: all}]");
  RawClient client(proxy.port());
  client.write("GET / HTTP/1.1\r\nHost: a\r\n\r\n");
  EXPECT_THAT(client.read_until("GET /\n"), HasSubstr("200 OK"));
  const auto answered = std::chrono::steady_clock::now();
  EXPECT_EQ(client.read_until(""), "");  // parked within 20 ms, closed at 400 ms
  const auto quiet = std::chrono::steady_clock::now() - answered;
  EXPECT_GE(quiet, std::chrono::milliseconds(390));
  EXPECT_LT(quiet, std::chrono::seconds(3));
}

TEST(Proxy, ClosesAParkedConnectionAtOnceOnStop) {
  ProxyFixture proxy("routes: [{name: all}]");
  RawClient client(proxy.port());
  client.write("GET / HTTP/1.1\r\nHost: a\r\n\r\n");
  EXPECT_THAT(client.read_until("\r\n\r\n"), HasSubstr("200 OK"));
  ASSERT_TRUE(parked_within_seconds(proxy, 1));
  const auto started = std::chrono::steady_clock::now();
  proxy.server().stop(std::chrono::seconds(30));
  EXPECT_LT(std::chrono::steady_clock::now() - started, std::chrono::seconds(5));
  EXPECT_EQ(proxy.server().open_connections(), 0U);
  EXPECT_EQ(client.read_until(""), "");  // closed, nothing more said
}

TEST(AdminPort, AnswersHealthReadinessAndKeyState) {
  ProxyFixture proxy(
      "limiters:\n  per-ip: {algorithm: fixed_window, limit: 5, window: 1h}\n"
      "routes: [{name: all, limiters: [per-ip]}]");
  const auto health = proxy.send(get("/healthz"), true);
  EXPECT_EQ(health.result(), http::status::ok);
  EXPECT_EQ(health.body(), "ok\n");
  EXPECT_EQ(proxy.send(get("/readyz"), true).body(), "ready\n");

  proxy.send(get("/"));
  proxy.send(get("/"));
  const auto state = proxy.send(get("/limiters/per-ip/127.0.0.1"), true);
  EXPECT_EQ(state.result(), http::status::ok);
  EXPECT_EQ(state[http::field::content_type], "application/json");
  EXPECT_THAT(state.body(), HasSubstr("\"remaining\":3,"));
  EXPECT_THAT(state.body(), HasSubstr("\"banned\":false"));
  // Looking does not consume: the same answer again.
  EXPECT_THAT(proxy.send(get("/limiters/per-ip/127.0.0.1"), true).body(),
              HasSubstr("\"remaining\":3,"));
  EXPECT_THAT(proxy.send(get("/limiters/per-ip/192.0.2.1"), true).body(),
              HasSubstr("\"remaining\":5,"));
  EXPECT_EQ(proxy.send(get("/limiters/nope/127.0.0.1"), true).result(), http::status::not_found);
  EXPECT_EQ(proxy.send(get("/limiters/per-ip"), true).result(), http::status::not_found);
  EXPECT_EQ(proxy.send(get("/elsewhere"), true).result(), http::status::not_found);
  EXPECT_EQ(proxy.send({http::verb::post, "/healthz", 11}, true).result(),
            http::status::method_not_allowed);
}

}  // namespace
}  // namespace sluice::test
