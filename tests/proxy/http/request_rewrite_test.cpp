// A request body held to be rewritten (a route's `cost_from.include_usage`, SPEC §9): first with
// a source of the test's own (which requests are held, the rewritten body and its length, a
// body that goes on as it came: not streaming, not JSON, past the cap, its client gone), then
// through the proxy over real sockets, curl over HTTP/1.1 (Content-Length, chunked, Expect:
// 100-continue) and h2c, to HTTP/1.1 and HTTP/2 upstreams: what the upstream received, and the
// usage it sent because it was asked charged to the limiter.
#include "proxy/http/request_rewrite.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <deque>
#include <string>
#include <vector>

#include "proxy/cost/usage_request.hpp"
#include "tests/support/event_loop.hpp"
#include "tests/support/eventually.hpp"
#include "tests/support/proxy_fixture.hpp"
#include "tests/support/recording_upstream.hpp"
#include "tests/support/scripted_source.hpp"
#include "tests/support/shell.hpp"
#include "tests/support/temp_directory.hpp"

namespace sluice::http {
namespace {

using HeldSource = test::ScriptedSource;
using HeldStep = test::Step;

/// Takes every piece at once and keeps them.
class KeepingSink final : public BodySink {
 public:
  bool send_now(const BodyPiece& piece, beast::error_code&) override {
    pieces.emplace_back(piece.bytes.data(), piece.bytes.size());
    ended = piece.last;
    return true;
  }
  io::Awaitable<beast::error_code> send_rest() override { co_return beast::error_code{}; }

  std::string whole() const {
    std::string all;
    for (const std::string& piece : pieces) {
      all += piece;
    }
    return all;
  }

  std::vector<std::string> pieces;
  bool ended = false;
};

/// A request head with `content_type` (none if empty) and its body's framing.
struct RewriteRequest {
  explicit RewriteRequest(std::string_view content_type,
                          std::optional<std::uint64_t> length = std::nullopt,
                          bool chunked = false) {
    if (!content_type.empty()) {
      fields.add(http::field::content_type, "Content-Type", content_type);
    }
    fields.seal();
    head = RequestHead{.fields = &fields,
                       .method = http::verb::post,
                       .method_string = "POST",
                       .target = "/v1/chat/completions",
                       .content_length = length,
                       .chunked = chunked};
  }
  HeadFields fields;
  RequestHead head;
};

config::Route route_with(bool include_usage) {
  config::Route route;
  route.name = "chat";
  route.cost_from = config::CostFrom{};
  route.cost_from->include_usage = include_usage;
  return route;
}

/// Holds the body `source` gives, then carries it to a sink, as a relay does.
struct Rewritten {
  telemetry::Metrics metrics{1};
  RequestRewrite rewrite;
  KeepingSink sink;
  Carried carried;
};

void hold_and_carry(const RequestHead& request, HeldSource& source, Rewritten& out) {
  test::EventLoop loop;
  loop.run([&]() -> io::Awaitable<void> {
    co_await out.rewrite.hold(request, source, out.metrics);
    BodyCarry body(out.rewrite, out.sink);
    if (!body.now()) {
      co_await body.rest();
    }
    out.carried = body.result();
  });
}

constexpr std::string_view kStreaming = R"({"model":"m","stream":true})";

TEST(RequestRewrite, HoldsJsonBodiesOnARouteWithIncludeUsageOnly) {
  const config::Route on = route_with(true);
  EXPECT_TRUE(RequestRewrite::wanted(on, RewriteRequest("application/json", 27).head));
  EXPECT_TRUE(
      RequestRewrite::wanted(on, RewriteRequest(" Application/JSON ; charset=utf-8", 27).head));
  EXPECT_TRUE(RequestRewrite::wanted(on, RewriteRequest("application/json", {}, true).head))
      << "chunked: held up to the cap";
  EXPECT_TRUE(RequestRewrite::wanted(
      on, RewriteRequest("application/json", cost::kMaxRewrittenRequest).head));
  EXPECT_FALSE(RequestRewrite::wanted(
      on, RewriteRequest("application/json", cost::kMaxRewrittenRequest + 1).head))
      << "too large: streams through";
  EXPECT_FALSE(RequestRewrite::wanted(on, RewriteRequest("application/json", 0).head));
  EXPECT_FALSE(RequestRewrite::wanted(on, RewriteRequest("application/json").head)) << "no body";
  EXPECT_FALSE(RequestRewrite::wanted(on, RewriteRequest("text/plain", 27).head));
  EXPECT_FALSE(RequestRewrite::wanted(on, RewriteRequest("application/jsonl", 27).head));
  EXPECT_FALSE(RequestRewrite::wanted(on, RewriteRequest("", 27).head));
  EXPECT_FALSE(
      RequestRewrite::wanted(route_with(false), RewriteRequest("application/json", 27).head));
  EXPECT_FALSE(
      RequestRewrite::wanted(config::Route{}, RewriteRequest("application/json", 27).head));
}

TEST(RequestRewrite, AStreamingRequestAsksForUsageWithItsNewLength) {
  const RewriteRequest request("application/json", {}, true);  // chunked
  HeldSource source(
      {{.bytes = std::string(kStreaming.substr(0, 10))},
       {.bytes = std::string(kStreaming.substr(10)), .last = true, .at_once = false}});
  Rewritten out;
  hold_and_carry(request.head, source, out);
  const std::string expected =
      R"({"model":"m","stream":true,"stream_options":{"include_usage":true}})";
  EXPECT_TRUE(out.rewrite.rewritten());
  EXPECT_EQ(out.sink.whole(), expected);
  EXPECT_EQ(out.sink.pieces.size(), 1u) << "held whole, sent as one piece";
  EXPECT_TRUE(out.sink.ended);
  EXPECT_FALSE(out.carried.error);
  EXPECT_EQ(out.rewrite.head().content_length, expected.size());
  EXPECT_FALSE(out.rewrite.head().chunked) << "sent with its Content-Length";
  EXPECT_EQ(out.rewrite.head().target, "/v1/chat/completions");
  EXPECT_EQ(source.given_back, (std::vector<std::size_t>{10, kStreaming.size() - 10}))
      << "each piece given back as it was held (an HTTP/2 window reopens)";
  EXPECT_EQ(source.waits, 1);
  EXPECT_NE(out.metrics.render({}).find("\nsluice_usage_requested_total 1\n"), std::string::npos);
}

TEST(RequestRewrite, KeepsOtherStreamOptions) {
  const std::string body = R"({"stream":true,"stream_options":{"foo":1}})";
  const RewriteRequest request("application/json", body.size());
  HeldSource source({{.bytes = body, .last = true}});
  Rewritten out;
  hold_and_carry(request.head, source, out);
  EXPECT_EQ(out.sink.whole(), R"({"stream":true,"stream_options":{"foo":1,"include_usage":true}})");
  EXPECT_EQ(out.rewrite.head().content_length, out.sink.whole().size());
}

TEST(RequestRewrite, OtherBodiesGoOnAsTheyCameWithTheirFraming) {
  for (const std::string& body :
       {std::string(R"({"model":"m","stream":false})"),
        std::string(R"({"stream":true,"stream_options":{"include_usage":true}})"),
        std::string(R"({"stream":true,)"), std::string("[1,2]")}) {
    SCOPED_TRACE(body);
    const RewriteRequest request("application/json", {}, true);
    HeldSource source({{.bytes = body.substr(0, 3)}, {.bytes = body.substr(3), .last = true}});
    Rewritten out;
    hold_and_carry(request.head, source, out);
    EXPECT_FALSE(out.rewrite.rewritten());
    EXPECT_EQ(out.sink.whole(), body);
    EXPECT_TRUE(out.sink.ended);
    EXPECT_TRUE(out.rewrite.head().chunked) << "still chunked";
    EXPECT_FALSE(out.rewrite.head().content_length);
    EXPECT_NE(out.metrics.render({}).find("\nsluice_usage_requested_total 0\n"), std::string::npos);
  }
}

TEST(RequestRewrite, ABodyPastTheCapStreamsOnUnchangedAndIsNeverHeldWhole) {
  // A streaming request padded past the cap: the part held, then the rest as it comes.
  const std::size_t piece = 300 * 1024;
  const std::string first = R"({"stream":true,"pad":")" + std::string(piece, 'x');
  const std::string middle(piece, 'y');
  const std::string end = std::string(piece, 'z') + R"("})";
  const RewriteRequest request("application/json", {}, true);
  HeldSource source({{.bytes = first},
                     {.bytes = middle},
                     {.bytes = middle, .at_once = false},
                     {.bytes = middle},
                     {.bytes = end, .last = true, .at_once = false}});
  Rewritten out;
  hold_and_carry(request.head, source, out);
  EXPECT_FALSE(out.rewrite.rewritten());
  EXPECT_LE(out.rewrite.held().size(), cost::kMaxRewrittenRequest);
  EXPECT_EQ(out.sink.whole(), first + middle + middle + middle + end);
  EXPECT_TRUE(out.sink.ended);
  EXPECT_FALSE(out.carried.error);
  EXPECT_TRUE(out.rewrite.head().chunked);
  EXPECT_EQ(source.given_back.size(), 5u) << "every piece given back once";
}

TEST(RequestRewrite, AClientThatFailsWhileHeldFailsAfterWhatCame) {
  const RewriteRequest request("application/json", 100);
  HeldSource source({{.bytes = "{\"stream\""},
                     {.bytes = "", .at_once = false, .error = http::error::partial_message}});
  Rewritten out;
  hold_and_carry(request.head, source, out);
  EXPECT_FALSE(out.rewrite.rewritten());
  EXPECT_EQ(out.sink.whole(), "{\"stream\"");
  EXPECT_FALSE(out.sink.ended);
  EXPECT_EQ(out.carried.error, http::error::partial_message);
  EXPECT_TRUE(out.carried.source_failed);
  EXPECT_TRUE(out.carried.started);
  EXPECT_EQ(out.rewrite.head().content_length, 100u) << "the head as it came";
}

TEST(RequestRewrite, AClientThatFailsAtOnceSendsNothing) {
  const RewriteRequest request("application/json", {}, true);
  HeldSource source({{.bytes = "", .error = http::error::bad_chunk}});
  Rewritten out;
  hold_and_carry(request.head, source, out);
  EXPECT_TRUE(out.sink.pieces.empty());
  EXPECT_EQ(out.carried.error, http::error::bad_chunk);
  EXPECT_FALSE(out.carried.started);
}

}  // namespace
}  // namespace sluice::http

namespace sluice::test {
namespace {

/// What the route is given: a token budget charged from OpenAI's usage, read from requests
/// rewritten to ask for it; `/plain` forwards to the same upstream without include_usage.
std::string rewriting_routes(const std::string& upstream_url) {
  return "limiters: {tokens: {algorithm: token_bucket, rate: 100/m, burst: 100, cost: "
         "response}}\n"
         "routes:\n"
         "  - {name: chat, match: {path: /v1/chat/completions}, upstream: \"" +
         upstream_url +
         "\", limiters: [tokens], cost_from: {usage: openai, include_usage: true}}\n"
         "  - {name: plain, match: {path: /plain}, upstream: \"" +
         upstream_url + "\", limiters: [tokens], cost_from: {usage: openai}}\n";
}

std::string curl_to(unsigned short port, const std::string& path, const std::string& arguments) {
  return output_of("curl -s --max-time 5 -o /dev/null -w '%{http_code}' " + arguments +
                   " http://127.0.0.1:" + std::to_string(port) + path + " 2>&1");
}

/// curl's arguments for a JSON body from `file` sent as `client` says: its protocol, and `-T -`
/// to send it from standard input, of unknown length (an HTTP/2 stream without content-length).
std::string json_post(const std::string& client, const std::filesystem::path& file) {
  const std::string body =
      client.ends_with("-T -") ? " < " + file.string() : " --data-binary @" + file.string();
  return client + " -H 'Content-Type: application/json'" + body;
}

std::string field_of(const ReceivedRequest& request, std::string_view name) {
  for (const auto& [field, value] : request.fields) {
    if (pipeline::equal_ignoring_case(field, name)) {
      return value;
    }
  }
  return "(none)";
}

/// How each client sends a body: HTTP/1.1 with a Content-Length or chunked, h2c with a
/// content-length or without.
const std::vector<std::string> kClients = {"--http1.1", "--http1.1 -H 'Transfer-Encoding: chunked'",
                                           "--http2-prior-knowledge",
                                           "--http2-prior-knowledge -X POST -T -"};

/// Whether `client` sends its body without a length.
bool unknown_length(const std::string& client) {
  return client.find("chunked") != std::string::npos || client.ends_with("-T -");
}

constexpr std::string_view kAsked =
    R"({"model":"m","messages":[{"role":"user","content":"Hi"}],"stream":true,"stream_options":{"x":1}})";
constexpr std::string_view kRewritten =
    R"({"model":"m","messages":[{"role":"user","content":"Hi"}],"stream":true,"stream_options":{"x":1,"include_usage":true}})";

/// What the upstream received for `body` sent by each client to `path` through `proxy`.
void expect_received(unsigned short port, RecordingUpstream& upstream, const std::string& path,
                     std::string_view body, std::string_view expected) {
  const TempDirectory scratch("request-rewrite");
  const std::filesystem::path file = scratch.write("body.json", std::string(body));
  for (const std::string& client : kClients) {
    SCOPED_TRACE(client);
    EXPECT_EQ(curl_to(port, path, json_post(client, file)), "200");
    const std::vector<ReceivedRequest> received = upstream.take();
    ASSERT_EQ(received.size(), 1u);
    EXPECT_TRUE(received[0].body == expected)
        << "received " << received[0].body.size() << " bytes: " << received[0].body.substr(0, 200);
    // A rewritten body goes with its new length; any other with the framing it came with.
    const bool rewritten = body != expected;
    const bool chunked = !rewritten && unknown_length(client);
    EXPECT_EQ(field_of(received[0], "Content-Length"),
              chunked ? "(none)" : std::to_string(expected.size()));
    EXPECT_EQ(field_of(received[0], "Transfer-Encoding"), chunked ? "chunked" : "(none)");
  }
}

TEST(RequestRewriteThroughTheProxy, AStreamingRequestAsksForUsageOverHttp11AndH2c) {
  RecordingUpstream upstream;
  ProxyFixture proxy(rewriting_routes(upstream.url()), "threads: 1");
  expect_received(proxy.port(), upstream, "/v1/chat/completions", kAsked, kRewritten);
}

TEST(RequestRewriteThroughTheProxy, OtherRequestsArriveByteForByte) {
  RecordingUpstream upstream;
  ProxyFixture proxy(rewriting_routes(upstream.url()), "threads: 1");
  // Not streaming, already asking, not JSON: as they came (and spacing kept).
  for (const std::string& body :
       {std::string(R"({ "model": "m", "stream": false })"),
        std::string(R"({"stream": true, "stream_options": {"include_usage": true}})"),
        std::string(R"({"stream": true, "model": )")}) {
    SCOPED_TRACE(body);
    expect_received(proxy.port(), upstream, "/v1/chat/completions", body, body);
  }
  // A route without include_usage.
  expect_received(proxy.port(), upstream, "/plain", kAsked, kAsked);
}

TEST(RequestRewriteThroughTheProxy, ABodyAboveTheCapArrivesUnchanged) {
  RecordingUpstream upstream;
  ProxyFixture proxy(rewriting_routes(upstream.url()), "threads: 1");
  const std::string large =
      R"({"stream":true,"pad":")" + std::string(cost::kMaxRewrittenRequest + 1000, 'x') + R"("})";
  expect_received(proxy.port(), upstream, "/v1/chat/completions", large, large);
}

TEST(RequestRewriteThroughTheProxy, ANonJsonContentTypeIsNotRewritten) {
  RecordingUpstream upstream;
  ProxyFixture proxy(rewriting_routes(upstream.url()), "threads: 1");
  const TempDirectory scratch("request-rewrite");
  const std::filesystem::path file = scratch.write("body.json", std::string(kAsked));
  EXPECT_EQ(curl_to(proxy.port(), "/v1/chat/completions",
                    "--http1.1 -H 'Content-Type: text/plain' --data-binary @" + file.string()),
            "200");
  const std::vector<ReceivedRequest> received = upstream.take();
  ASSERT_EQ(received.size(), 1u);
  EXPECT_EQ(received[0].body, kAsked);
}

TEST(RequestRewriteThroughTheProxy, AClientWaitingForContinueGetsItAndItsBodyIsRewritten) {
  RecordingUpstream upstream;
  ProxyFixture proxy(rewriting_routes(upstream.url()), "threads: 1");
  const TempDirectory scratch("request-rewrite");
  const std::filesystem::path file = scratch.write("body.json", std::string(kAsked));
  // curl waits 10 s for the 100 (Continue) and gives up after 5: only a 100 gets it through.
  for (const std::string client : {"--http1.1", "--http1.1 -H 'Transfer-Encoding: chunked'"}) {
    SCOPED_TRACE(client);
    EXPECT_EQ(
        curl_to(proxy.port(), "/v1/chat/completions",
                json_post(client, file) + " -H 'Expect: 100-continue' --expect100-timeout 10"),
        "200");
    const std::vector<ReceivedRequest> received = upstream.take();
    ASSERT_EQ(received.size(), 1u);
    EXPECT_EQ(received[0].body, kRewritten);
    EXPECT_EQ(field_of(received[0], "Expect"), "(none)");
  }
}

TEST(RequestRewriteThroughTheProxy, AnHttp2UpstreamGetsTheRewrittenBodyWithItsLength) {
  // The HTTP/2 upstream is a second proxy (h2c), in front of the recording upstream; it checks
  // that the DATA match the content-length the first one sent.
  RecordingUpstream upstream;
  ProxyFixture inner("routes: [{name: all, upstream: \"" + upstream.url() + "\"}]", "threads: 1");
  ProxyFixture outer(rewriting_routes("h2c://127.0.0.1:" + std::to_string(inner.port())),
                     "threads: 1");
  expect_received(outer.port(), upstream, "/v1/chat/completions", kAsked, kRewritten);
  expect_received(outer.port(), upstream, "/plain", kAsked, kAsked);
}

/// An OpenAI chat completion streamed: its usage chunk only when the request asked for it.
std::string completion_for(const ReceivedRequest& request) {
  std::string events = "data: {\"id\":\"c1\",\"choices\":[{\"delta\":{\"content\":\"Hi\"}}]}\n\n";
  if (request.body.find(R"("include_usage":true)") != std::string::npos) {
    events +=
        "data: {\"id\":\"c1\",\"choices\":[],\"usage\":{\"prompt_tokens\":50,"
        "\"completion_tokens\":100,\"total_tokens\":150}}\n\n";
  }
  events += "data: [DONE]\n\n";
  return "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nContent-Length: " +
         std::to_string(events.size()) + "\r\nConnection: close\r\n\r\n" + events;
}

TEST(RequestRewriteThroughTheProxy, TheUsageTheUpstreamWasAskedForIsCharged) {
  for (const std::string& client : kClients) {
    SCOPED_TRACE(client);
    RecordingUpstream upstream(completion_for);
    ProxyFixture proxy(rewriting_routes(upstream.url()), "threads: 1");
    const TempDirectory scratch("request-rewrite");
    const std::filesystem::path file = scratch.write("body.json", R"({"model":"m","stream":true})");
    const std::string out =
        output_of("curl -s --max-time 5 " + json_post(client, file) +
                  " http://127.0.0.1:" + std::to_string(proxy.port()) + "/v1/chat/completions");
    EXPECT_THAT(out, ::testing::HasSubstr("\"usage\":{\"prompt_tokens\":50"))
        << "the usage chunk reaches the client too";
    EXPECT_TRUE(holds_within(std::chrono::seconds(5), [&] {
      return proxy.send(get("/metrics"), true)
                 .body()
                 .find("sluice_cost_charged_total{limiter=\"tokens\"} 150\n") != std::string::npos;
    })) << proxy.send(get("/metrics"), true).body();
    EXPECT_TRUE(admin_shows(proxy.admin_port(), "/metrics", "\nsluice_usage_requested_total 1\n"));
    // 150 tokens of 100: in debt (asked over HTTP/1.1: curl may take an HTTP/2 refusal of a
    // request whose body the proxy did not read for a stream error).
    EXPECT_EQ(curl_to(proxy.port(), "/v1/chat/completions", json_post("--http1.1", file)), "429");
  }
}

}  // namespace
}  // namespace sluice::test
