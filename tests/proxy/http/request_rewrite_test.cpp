// A request body held to be rewritten (a route's `cost_from.include_usage`, SPEC §9), with a
// source of the test's own: which requests are held, the rewritten body and its length, a body
// that goes on as it came (not streaming, not JSON, past the cap, its client gone).
#include "proxy/http/request_rewrite.hpp"

#include <gtest/gtest.h>

#include <deque>
#include <string>
#include <vector>

#include "proxy/cost/usage_request.hpp"
#include "tests/support/event_loop.hpp"

namespace sluice::http {
namespace {

/// One piece a HeldSource gives: there at once, or only after a wait.
struct HeldStep {
  std::string bytes;
  bool last = false;
  bool at_once = true;
  beast::error_code error{};
};

/// Gives its steps in order, the waiting ones from next(); records what was given back.
class HeldSource final : public BodySource {
 public:
  explicit HeldSource(std::deque<HeldStep> steps) : steps_(std::move(steps)) {}

  bool next_now(BodyPiece& piece, beast::error_code& ec) override {
    if (steps_.empty() || !steps_.front().at_once) {
      return false;
    }
    give(piece, ec);
    return true;
  }
  io::Awaitable<beast::error_code> next(BodyPiece& piece) override {
    ++waits;
    beast::error_code ec;
    give(piece, ec);
    co_return ec;
  }
  void taken(std::size_t count) noexcept override { given_back.push_back(count); }

  int waits = 0;
  std::vector<std::size_t> given_back;

 private:
  void give(BodyPiece& piece, beast::error_code& ec) {
    current_ = std::move(steps_.front());
    steps_.pop_front();
    ec = current_.error;
    piece = BodyPiece{.bytes = current_.bytes, .last = current_.last};
  }

  std::deque<HeldStep> steps_;
  HeldStep current_;
};

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
