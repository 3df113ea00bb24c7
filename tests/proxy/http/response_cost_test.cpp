// What a response cost, read on its way through the proxy (SPEC §9), over real sockets: a real
// upstream's responses (chunked event streams, a header, a stream cut short) to curl over
// HTTP/1.1 and HTTP/2, the limiter charged what they said, the body passed on unchanged, and
// the charge on /metrics.
#include "proxy/http/response_cost.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

#include "tests/support/eventually.hpp"
#include "tests/support/grpc_upstream.hpp"
#include "tests/support/proxy_fixture.hpp"
#include "tests/support/redis_server.hpp"
#include "tests/support/shell.hpp"
#include "tests/support/test_upstream.hpp"

namespace sluice::test {
namespace {

using ::testing::HasSubstr;

/// An OpenAI chat completion streamed with include_usage: chunks with `"usage": null`, then the
/// usage chunk, then [DONE]; in HTTP/1.1 chunks split mid-event.
constexpr std::string_view kEvents =
    "data: {\"id\":\"c1\",\"choices\":[{\"delta\":{\"content\":\"Hi\"}}],\"usage\":null}\n\n"
    "data: {\"id\":\"c1\",\"choices\":[],\"usage\":{\"prompt_tokens\":50,\"completion_tokens\":"
    "100,\"total_tokens\":150}}\n\n"
    "data: [DONE]\n\n";

std::string chunked(std::string_view body, std::size_t piece) {
  std::string out;
  for (std::size_t at = 0; at < body.size(); at += piece) {
    const std::string_view part = body.substr(at, piece);
    char size[16];
    std::snprintf(size, sizeof size, "%zx\r\n", part.size());
    out += size;
    out += part;
    out += "\r\n";
  }
  return out + "0\r\n\r\n";
}

std::string event_stream_response() {
  return "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n"
         "Connection: close\r\n\r\n" +
         chunked(kEvents, 37);
}

std::string config_for(const CannedUpstream& upstream, std::string_view cost_from) {
  return "limiters: {tokens: {algorithm: token_bucket, rate: 100/m, burst: 100, cost: response}}\n"
         "routes: [{name: chat, upstream: \"" +
         upstream.url() + "\", limiters: [tokens], cost_from: " + std::string(cost_from) + "}]";
}

std::string curl_cost(const std::string& arguments) {
  return output_of("curl -sS --max-time 5 " + arguments + " 2>&1");
}

std::string chat_url(const ProxyFixture& proxy) {
  return "http://127.0.0.1:" + std::to_string(proxy.port()) + "/v1/chat/completions";
}

std::string metrics_of(ProxyFixture& proxy) { return proxy.send(get("/metrics"), true).body(); }

/// Waits until the proxy has charged `cost` in all: the client may have its response's last
/// byte before the proxy has settled it.
void charged(ProxyFixture& proxy, int cost) {
  const std::string line =
      "sluice_cost_charged_total{limiter=\"tokens\"} " + std::to_string(cost) + "\n";
  EXPECT_TRUE(holds_within(std::chrono::seconds(5), [&] {
    return metrics_of(proxy).find(line) != std::string::npos;
  })) << metrics_of(proxy);
}

TEST(ResponseCost, ChargesAnEventStreamItsUsageOverHttp11AndHttp2) {
  for (const std::string version : {"--http1.1", "--http2-prior-knowledge"}) {
    SCOPED_TRACE(version);
    CannedUpstream upstream(event_stream_response());
    ProxyFixture proxy(config_for(upstream, "{usage: openai}"), "threads: 1");
    // The stream reaches the client as the upstream sent it.
    EXPECT_EQ(curl_cost(version + " -d '{}' " + chat_url(proxy)), kEvents);
    charged(proxy, 150);
    // 150 tokens of a budget of 100: 50 in debt, paid back at 100 a minute.
    EXPECT_EQ(curl_cost(version + " -d '{}' -o /dev/null -w '%{http_code}' " + chat_url(proxy)),
              "429");
    EXPECT_EQ(upstream.requests(), 1);
    EXPECT_THAT(
        metrics_of(proxy),
        HasSubstr("sluice_cost_readings_total{limiter=\"tokens\",result=\"reported\"} 1\n"));
  }
}

TEST(ResponseCost, ChargesWhatAHeaderSays) {
  CannedUpstream upstream(
      "HTTP/1.1 200 OK\r\nX-Tokens-Used: 70\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok");
  ProxyFixture proxy(config_for(upstream, "{header: X-Tokens-Used}"), "threads: 1");
  EXPECT_EQ(curl_cost("-o /dev/null -w '%{http_code}' " + chat_url(proxy)), "200");
  charged(proxy, 70);  // 30 left
  EXPECT_EQ(curl_cost("-o /dev/null -w '%{http_code}' " + chat_url(proxy)), "200");
  charged(proxy, 140);  // -40 left
  EXPECT_EQ(curl_cost("-o /dev/null -w '%{http_code}' " + chat_url(proxy)), "429");
}

TEST(ResponseCost, ARateLimitHeadSaysWhatRemainsAfterTheCostItsResponseHeadSays) {
  // The cost is in the upstream's head: the client's head, written after it, counts it.
  CannedUpstream upstream(
      "HTTP/1.1 200 OK\r\nX-Tokens-Used: 70\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok");
  ProxyFixture proxy(config_for(upstream, "{header: X-Tokens-Used}"), "threads: 1");
  for (const std::string version : {"--http1.1", "--http2-prior-knowledge"}) {
    SCOPED_TRACE(version);
    const std::string head = curl_cost(version + " -s -D - -o /dev/null " + chat_url(proxy));
    // 100 at admission (the first), or the first's debt paid back at 100 a minute: never more
    // than 30 after this one's 70.
    EXPECT_THAT(head, HasSubstr("\"tokens\";q=100;w=60"));
    EXPECT_THAT(head, ::testing::ContainsRegex(version == "--http1.1" ? "\"tokens\";r=30;"
                                                                      : "\"tokens\";r=0;"))
        << head;
    charged(proxy, version == "--http1.1" ? 70 : 140);
  }
}

TEST(ResponseCost, ChargesWhatAGrpcCallsTrailerSays) {
  // The cost comes after the body, in the gRPC call's trailers (HTTP/2 both sides).
  GrpcUpstream grpc;
  ProxyFixture proxy(
      "limiters: {tokens: {algorithm: token_bucket, rate: 100/m, burst: 100, cost: response}}\n"
      "routes: [{name: grpc, match: {path_prefix: /test.Echo/}, upstream: \"h2c://127.0.0.1:" +
          std::to_string(grpc.port()) +
          "\", limiters: [tokens], cost_from: {header: tokens-used, estimate: 1}}]",
      "threads: 1");
  const std::string message(60, 'x');  // the upstream says it cost its size: 60
  EXPECT_THAT(grpc_call(proxy.port(), "--method Unary --message " + message),
              HasSubstr("\"code\": \"OK\""));
  charged(proxy, 60);
  EXPECT_THAT(grpc_call(proxy.port(), "--method Unary --message " + message),
              HasSubstr("\"code\": \"OK\""));
  charged(proxy, 120);  // 20 in debt
  EXPECT_THAT(grpc_call(proxy.port(), "--method Unary --message " + message),
              HasSubstr("RESOURCE_EXHAUSTED"));
}

TEST(ResponseCost, CallsInFlightTogetherPassTheBudgetByNoMoreThanTheBound) {
  // A budget of 1000, calls of 300 each, at most 4 of a key in flight (a concurrency limiter):
  // the bound is 4 × 300 − 1 = 1199 past the budget. Eight calls at once, the upstream holding
  // its answers until four are in: those four admitted while the budget had room; a call that
  // comes as they end may find room left by those charged so far (300 × 3 of 1000) and pass
  // too. Whatever the timing, every admitted call is charged and the budget is passed by at
  // most the bound.
  CannedUpstream upstream(
      "HTTP/1.1 200 OK\r\nX-Tokens-Used: 300\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok",
      true, 4);
  ProxyFixture proxy(
      "limiters:\n"
      "  tokens: {algorithm: token_bucket, rate: 1/h, burst: 1000, cost: response}\n"
      "  in-flight: {algorithm: concurrency, limit: 4}\n"
      "routes: [{name: chat, upstream: \"" +
          upstream.url() +
          "\", limiters: [tokens, in-flight], cost_from: {header: X-Tokens-Used}}]",
      "threads: 2");
  std::string calls;
  for (int i = 0; i < 8; ++i) {
    calls += "curl -s --max-time 10 -o /dev/null -w '%{http_code}\\n' " + chat_url(proxy) + " & ";
  }
  const std::string codes = output_of("(" + calls + "wait) | grep -c 200");
  const int admitted = std::stoi(codes);
  EXPECT_GE(admitted, 4);
  EXPECT_EQ(upstream.requests(), admitted);
  charged(proxy, 300 * admitted);
  EXPECT_LE(300 * admitted - 1000, 4 * 300 - 1);
  // In debt now: refused.
  EXPECT_EQ(curl_cost("-o /dev/null -w '%{http_code}' " + chat_url(proxy)), "429");
}

TEST(ResponseCost, ChargesTheEstimateForAStreamCutBeforeItsUsage) {
  // The upstream goes away in the middle of the stream: the usage never came.
  const std::string events = chunked(kEvents.substr(0, 80), 40);
  CannedUpstream upstream(
      "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n"
      "Connection: close\r\n\r\n" +
      events.substr(0, events.size() - 5));  // without the last chunk
  ProxyFixture proxy(config_for(upstream, "{usage: openai, estimate: 30}"), "threads: 1");
  curl_cost("-o /dev/null " + chat_url(proxy));
  charged(proxy, 30);
  EXPECT_THAT(metrics_of(proxy),
              HasSubstr("sluice_cost_readings_total{limiter=\"tokens\",result=\"missing\"} 1\n"));
}

/// Two replicas on one Redis: what one charged after its response, the other refuses on.
TEST(ResponseCost, ReplicasOnOneRedisShareTheChargeOfAStream) {
  const RedisServer redis;
  CannedUpstream upstream(event_stream_response());
  const std::string store =
      "threads: 1\nstore: {type: redis, redis: {url: \"" + redis.url() + "\"}}";
  ProxyFixture first(config_for(upstream, "{usage: openai}"), store);
  ProxyFixture second(config_for(upstream, "{usage: openai}"), store);
  EXPECT_EQ(curl_cost("--http2-prior-knowledge -d '{}' " + chat_url(first)), kEvents);
  charged(first, 150);
  EXPECT_TRUE(holds_within(std::chrono::seconds(5), [&] {  // settled in Redis, in the background
    return metrics_of(first).find("sluice_store_lost_settlements_total{store=\"redis\"} 0\n") !=
               std::string::npos &&
           curl_cost("-d '{}' -o /dev/null -w '%{http_code}' " + chat_url(second)) == "429";
  }));
  EXPECT_EQ(upstream.requests(), 1);
}

}  // namespace
}  // namespace sluice::test
