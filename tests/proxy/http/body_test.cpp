// The one body loop on its own, with a source and a sink of the test's own: pieces in order,
// each given back once sent, no wait while everything is there, and which side a failure came
// from. The codecs' sources and sinks are tested with real connections elsewhere.
#include "proxy/http/body.hpp"

#include <gtest/gtest.h>

#include <deque>
#include <string>
#include <vector>

#include "tests/support/event_loop.hpp"
#include "tests/support/scripted_source.hpp"

namespace sluice::http {
namespace {

using test::ScriptedSource;
using test::Step;

/// Records what it is sent; a send finishes at once unless `wait_on_send`, and then a poll
/// (sent_now) says it finished once `taken_by_peer`.
class RecordingSink final : public BodySink {
 public:
  bool send_now(const BodyPiece& piece, beast::error_code& ec) override {
    sent.emplace_back(piece.bytes.data(), piece.bytes.size());
    ended = piece.last;
    ec = fail_with;
    return !wait_on_send || taken_by_peer || fail_with;
  }
  io::Awaitable<beast::error_code> send_rest() override {
    ++waits;
    co_return beast::error_code{};
  }
  bool sent_now(beast::error_code&) override { return taken_by_peer; }

  std::vector<std::string> sent;
  bool ended = false;
  bool wait_on_send = false;
  bool taken_by_peer = false;
  beast::error_code fail_with;
  int waits = 0;
};

/// Carries the whole body, as a relay does.
io::Awaitable<Carried> carry(BodySource& source, BodySink& sink) {
  BodyCarry body(source, sink);
  if (!body.now()) {
    co_await body.rest();
  }
  co_return body.result();
}

TEST(BodyCarry, CarriesABodyThatIsAllThereWithoutWaiting) {
  ScriptedSource source({{.bytes = "hel"}, {.bytes = "lo", .last = true}});
  RecordingSink sink;
  BodyCarry body(source, sink);
  EXPECT_TRUE(body.now());
  EXPECT_EQ(sink.sent, (std::vector<std::string>{"hel", "lo"}));
  EXPECT_TRUE(sink.ended);
  EXPECT_EQ(source.given_back, (std::vector<std::size_t>{3, 2}));
  EXPECT_FALSE(body.result().error);
  EXPECT_TRUE(body.result().started);
  EXPECT_EQ(source.waits + sink.waits, 0);
}

TEST(BodyCarry, AnEmptyBodyIsOneLastPiece) {
  ScriptedSource source({{.bytes = "", .last = true}});
  RecordingSink sink;
  BodyCarry body(source, sink);
  EXPECT_TRUE(body.now());
  EXPECT_EQ(sink.sent, (std::vector<std::string>{""}));
  EXPECT_TRUE(sink.ended);
}

TEST(BodyCarry, WaitsForWhatIsNotThereAndGoesOnFromWhereItStopped) {
  ScriptedSource source({{.bytes = "a"},
                         {.bytes = "b", .at_once = false},
                         {.bytes = "c"},
                         {.bytes = "d", .last = true, .at_once = false}});
  RecordingSink sink;
  BodyCarry body(source, sink);
  EXPECT_FALSE(body.now()) << "stopped at the piece still to come";
  EXPECT_EQ(sink.sent, (std::vector<std::string>{"a"}));
  test::EventLoop loop;
  loop.run([&]() -> io::Awaitable<void> { co_await body.rest(); });
  EXPECT_EQ(sink.sent, (std::vector<std::string>{"a", "b", "c", "d"}));
  EXPECT_EQ(source.waits, 2);
  EXPECT_EQ(source.given_back, (std::vector<std::size_t>{1, 1, 1, 1}));
  EXPECT_TRUE(sink.ended);
}

TEST(BodyCarry, FinishesASendThatCouldNotGoAtOnce) {
  ScriptedSource source({{.bytes = "slow", .last = true}});
  RecordingSink sink;
  sink.wait_on_send = true;
  test::EventLoop loop;
  Carried carried;
  loop.run([&]() -> io::Awaitable<void> { carried = co_await carry(source, sink); });
  EXPECT_EQ(sink.waits, 1);
  EXPECT_EQ(source.given_back, (std::vector<std::size_t>{4})) << "given back once sent";
  EXPECT_FALSE(carried.error);
}

TEST(BodyCarry, AskedAgainItFindsASendFinishedMeanwhile) {
  // As the HTTP/2 to HTTP/2 relay carries both bodies: now() each time something changed.
  ScriptedSource source({{.bytes = "one"}, {.bytes = "two", .last = true}});
  RecordingSink sink;
  sink.wait_on_send = true;
  BodyCarry body(source, sink);
  EXPECT_FALSE(body.now());
  EXPECT_FALSE(body.now()) << "nothing changed";
  EXPECT_TRUE(source.given_back.empty()) << "lent until sent";
  sink.taken_by_peer = true;
  EXPECT_TRUE(body.now());
  EXPECT_EQ(sink.sent, (std::vector<std::string>{"one", "two"}));
  EXPECT_EQ(source.given_back, (std::vector<std::size_t>{3, 3}));
}

TEST(BodyCarry, ASourceThatFailsFirstHasSentNothing) {
  ScriptedSource source({{.bytes = "", .error = http::error::partial_message}});
  RecordingSink sink;
  BodyCarry body(source, sink);
  EXPECT_TRUE(body.now());
  EXPECT_EQ(body.result().error, http::error::partial_message);
  EXPECT_TRUE(body.result().source_failed);
  EXPECT_FALSE(body.result().started) << "too early for anything to have gone out";
  EXPECT_TRUE(sink.sent.empty());
}

TEST(BodyCarry, ASourceThatFailsLaterHasStarted) {
  ScriptedSource source(
      {{.bytes = "part"}, {.bytes = "", .at_once = false, .error = beast::error::timeout}});
  RecordingSink sink;
  test::EventLoop loop;
  Carried carried;
  loop.run([&]() -> io::Awaitable<void> { carried = co_await carry(source, sink); });
  EXPECT_EQ(carried.error, beast::error::timeout);
  EXPECT_TRUE(carried.source_failed);
  EXPECT_TRUE(carried.started);
}

TEST(BodyCarry, ASinkThatFailsNamesItselfAndThePieceIsGivenBack) {
  ScriptedSource source({{.bytes = "lost"}, {.bytes = "never", .last = true}});
  RecordingSink sink;
  sink.fail_with = net::error::broken_pipe;
  BodyCarry body(source, sink);
  EXPECT_TRUE(body.now());
  EXPECT_EQ(body.result().error, net::error::broken_pipe);
  EXPECT_FALSE(body.result().source_failed);
  EXPECT_EQ(sink.sent, (std::vector<std::string>{"lost"})) << "nothing after the failure";
  EXPECT_EQ(source.given_back, (std::vector<std::size_t>{4})) << "an HTTP/2 window reopens";
}

}  // namespace
}  // namespace sluice::http
