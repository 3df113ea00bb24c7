// serve_exchange in memory: a Downstream of the test's own in place of a codec, the memory
// store, a manual clock. What each decision leads to (an answer, a relay, nothing for a client
// gone), and what comes after it: permits back, the metrics counted.
#include "proxy/http/exchange.hpp"

#include <gtest/gtest.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "config/load_config.hpp"
#include "proxy/store/memory_store.hpp"
#include "tests/support/manual_clock.hpp"

namespace sluice::http {
namespace {

using namespace std::chrono_literals;

/// A client side that records what the exchange asked of it.
class RecordingDownstream final : public Downstream {
 public:
  explicit RecordingDownstream(const RequestHead& request) : request_(request) {}

  pipeline::RequestView request_view() const noexcept override {
    return {.method = request_.method_string,
            .target = request_.target,
            .host = request_.head().value_of(http::field::host),
            .headers = request_.head().headers(),
            .peer = peer_,
            .certificate = nullptr};
  }
  bool gone() const noexcept override { return gone_; }

  OwnResponse& own() override { return own_; }
  /// The last own answer's head.
  std::string_view answer_head() const noexcept { return {own_.head.data(), own_.head.size()}; }
  bool send_own_now(Exchange& exchange) override {
    // "HTTP/1.1 429 Too Many Requests": the status is the three digits after the first space.
    const std::string_view head(own_.head.data(), own_.head.size());
    answered.push_back(static_cast<unsigned>(std::stoul(std::string(head.substr(9, 3)))));
    answered_keep_alive = own_.keep_alive;
    exchange.keep_alive = own_.keep_alive;
    return true;
  }
  io::Awaitable<void> send_own(Exchange&) override {
    ADD_FAILURE() << "answered at once: nothing to finish";
    co_return;
  }
  io::Awaitable<RelayOutcome> relay(Exchange& exchange) override {
    ++relayed;
    if (charge_work != nullptr) {
      spare_charge_work_in_relay = charge_work->spares();
    }
    if (exchange.cost != nullptr && response_head != nullptr) {
      exchange.cost->begin(*exchange.meter, *response_head);
      for (const std::string_view piece : response_body) {
        exchange.cost->seen(BodyPiece{.bytes = piece, .last = false, .trailers = nullptr});
      }
    }
    co_return relay_outcome;
  }
  ResponseCost& response_cost() override { return cost_; }

  RelayOutcome relay_outcome{.keep_alive = true, .status = 200};  ///< What each relay returns.
  /// The response each relay shows the exchange's cost meter, if any.
  const HeadFields* response_head = nullptr;
  std::vector<std::string_view> response_body;
  std::vector<unsigned> answered;    ///< The status of each own answer.
  bool answered_keep_alive = false;  ///< The last own answer's.
  int relayed = 0;
  bool gone_ = false;
  /// When set, the loop's spare charge work is counted at each relay.
  const ChargeWorkPool* charge_work = nullptr;
  std::size_t spare_charge_work_in_relay = 0;

 private:
  const RequestHead& request_;
  OwnResponse own_;
  ResponseCost cost_;
  pipeline::IpAddress peer_ = *pipeline::IpAddress::parse("192.0.2.7");
};

/// One event loop's context around a configuration, with the memory store and a manual clock.
class ExchangeLoop {
 public:
  explicit ExchangeLoop(const std::string& limiters_and_routes)
      : config_(std::make_shared<const config::ProxyConfig>(config::parse_config(
            "upstream: \"http://127.0.0.1:9\"\nlog: {access: false}\n" + limiters_and_routes,
            "test.yaml", [](std::string_view) { return std::nullopt; }))),
        metrics_(1),
        live_(std::make_shared<const live::Generation>(config_, nullptr, metrics_)),
        proxy_{.live = live_, .metrics = metrics_, .access_log = access_log_, .clock = clock_},
        pool_(1, 1s),
        chunks_(1, 1),
        states_(1, 1),
        loop_(proxy_, 0, pool_, chunks_, states_) {
    proxy_.store = &store_;
  }

  /// Serves `request` (a whole HTTP/1.1 head) through `downstream` to the end; the exchange's
  /// keep_alive after it.
  bool serve(RecordingDownstream& downstream, const RequestHead& request,
             const DescribedRequest* described = nullptr) {
    pipeline::Decision decision;
    Exchange exchange{.generation = *live_.current(),
                      .request = request,
                      .decision = decision,
                      .keep_alive = true,
                      .started = std::chrono::steady_clock::now()};
    exchange.described = described;
    boost::asio::co_spawn(io_, serve_exchange(downstream, exchange, loop_),
                          [](const std::exception_ptr& error) {
                            if (error) {
                              std::rethrow_exception(error);
                            }
                          });
    io_.restart();
    io_.run();
    last_outcome = decision.outcome;
    return exchange.keep_alive;
  }

  /// The route's count of requests with `decision` on the loop.
  std::uint64_t counted(std::string_view route, telemetry::MetricDecision decision) {
    return metrics_.route(route)[0]->decisions[static_cast<std::size_t>(decision)].value();
  }

  test::ManualClock& clock() { return clock_; }
  LoopContext& context() { return loop_; }
  telemetry::Metrics& metrics() { return metrics_; }
  pipeline::Outcome last_outcome = pipeline::Outcome::no_route;

 private:
  std::shared_ptr<const config::ProxyConfig> config_;
  telemetry::Metrics metrics_;
  live::LiveConfig live_;
  telemetry::AccessLog access_log_;
  test::ManualClock clock_;
  store::MemoryStore store_;
  ProxyState proxy_;
  UpstreamPool pool_;
  io::ChunkPool chunks_;
  RequestStatePool states_;
  LoopContext loop_;
  boost::asio::io_context io_;
};

/// A request head, parsed as a codec hands it over.
struct ParsedRequest {
  explicit ParsedRequest(std::string_view text) : parser(head) {
    boost::beast::error_code ec;
    parser.put(boost::asio::buffer(text.data(), text.size()), ec);
    EXPECT_FALSE(ec) << ec.message();
    request = head_of(parser);
  }
  HeadFields head;
  RequestParser parser;
  RequestHead request;
};

constexpr std::string_view kGet = "GET /api/x HTTP/1.1\r\nHost: a\r\n\r\n";

TEST(ServeExchange, ARelayedRequestHoldsNoChargeWorkWhileItWaitsForItsUpstream) {
  ExchangeLoop loop(
      "limiters: {two: {algorithm: fixed_window, limit: 2, window: 1m}}\n"
      "routes: [{name: api, limiters: [two]}]");
  ParsedRequest request(kGet);
  RecordingDownstream downstream(request.request);
  downstream.charge_work = &loop.context().charge_work;
  EXPECT_TRUE(loop.serve(downstream, request.request));
  EXPECT_EQ(downstream.relayed, 1);
  // Borrowed to decide it, given back before the relay: the relay finds it among the spares.
  EXPECT_EQ(downstream.spare_charge_work_in_relay, 1u);
}

TEST(ServeExchange, RelaysWhatThePipelineAdmitsAndAnswersWhatItLimits) {
  ExchangeLoop loop(
      "limiters: {two: {algorithm: fixed_window, limit: 2, window: 1m}}\n"
      "routes: [{name: api, limiters: [two]}]");
  ParsedRequest request(kGet);
  RecordingDownstream downstream(request.request);
  EXPECT_TRUE(loop.serve(downstream, request.request));
  EXPECT_TRUE(loop.serve(downstream, request.request));
  EXPECT_TRUE(loop.serve(downstream, request.request));  // a 429 to a request without a body
  EXPECT_TRUE(downstream.answered_keep_alive);
  EXPECT_EQ(downstream.relayed, 2);
  EXPECT_EQ(downstream.answered, std::vector<unsigned>{429});
  EXPECT_EQ(loop.counted("api", telemetry::MetricDecision::allowed), 2u);
  EXPECT_EQ(loop.counted("api", telemetry::MetricDecision::limited), 1u);
  // The next window admits again: the exchange reads the loop's clock.
  loop.clock().advance(1min);
  EXPECT_TRUE(loop.serve(downstream, request.request));
  EXPECT_EQ(downstream.relayed, 3);
}

/// A response head with these fields, as a relay reads it.
HeadFields response_head(
    std::initializer_list<std::pair<std::string_view, std::string_view>> fields) {
  HeadFields head;
  for (const auto& [name, value] : fields) {
    head.add(http::string_to_field(name), name, value);
  }
  head.seal();
  return head;
}

TEST(ServeExchange, ChargesWhatTheResponseSaidItCostOnceItIsOver) {
  // 100 tokens a minute; the response reports 150 in OpenAI's usage, in two pieces.
  ExchangeLoop loop(
      "limiters: {tokens: {algorithm: token_bucket, rate: 100/m, burst: 100, cost: response}}\n"
      "routes: [{name: chat, limiters: [tokens], cost_from: {usage: openai}}]");
  ParsedRequest request(
      "POST /v1/chat/completions HTTP/1.1\r\nHost: a\r\nContent-Length: 0\r\n\r\n");
  RecordingDownstream downstream(request.request);
  const HeadFields head = response_head({{"Content-Type", "application/json"}});
  downstream.response_head = &head;
  downstream.response_body = {R"({"id":"c1","usage":{"prompt_tokens":50,"complet)",
                              R"(ion_tokens":100,"total_tokens":150}})"};
  loop.serve(downstream, request.request);
  EXPECT_EQ(downstream.relayed, 1);
  telemetry::CostCounters& counters = *loop.metrics().cost("tokens")[0];
  EXPECT_EQ(counters.charged.value(), 150U);
  EXPECT_EQ(counters.readings[0].value(), 1U);  // reported
  // 50 tokens in debt: limited until they are paid back and one more is in.
  loop.serve(downstream, request.request);
  EXPECT_EQ(downstream.answered, std::vector<unsigned>{429});
  loop.clock().advance(30600ms);
  downstream.response_body = {R"({"usage":{"total_tokens":-4}})"};
  loop.serve(downstream, request.request);
  EXPECT_EQ(downstream.relayed, 2);
  EXPECT_EQ(counters.readings[2].value(), 1U);  // invalid: charged the estimate, 0
  EXPECT_EQ(counters.charged.value(), 150U);
}

TEST(ServeExchange, AnswersARouteThatRespondsAndARequestThatMatchesNone) {
  ExchangeLoop loop(
      "routes:\n  - {name: status, match: {path: /status}, respond: {status: 200, body: ok}}");
  ParsedRequest status("GET /status HTTP/1.1\r\nHost: a\r\n\r\n");
  RecordingDownstream to_status(status.request);
  loop.serve(to_status, status.request);
  ParsedRequest other(kGet);
  RecordingDownstream to_other(other.request);
  loop.serve(to_other, other.request);
  EXPECT_EQ(to_status.relayed + to_other.relayed, 0);
  EXPECT_EQ(to_status.answered, std::vector<unsigned>{200});
  EXPECT_EQ(to_other.answered, std::vector<unsigned>{404});
  EXPECT_EQ(loop.counted("status", telemetry::MetricDecision::allowed), 1u);
  EXPECT_EQ(loop.counted("", telemetry::MetricDecision::no_route), 1u);
}

TEST(ServeExchange, AnswersAnUpstreamThatFailedBeforeItsResponseAndClosesTheConnection) {
  ExchangeLoop loop("routes: [{name: api}]");
  ParsedRequest request(kGet);
  RecordingDownstream downstream(request.request);
  downstream.relay_outcome = failed_before_response(UpstreamFailure::connect);
  EXPECT_FALSE(loop.serve(downstream, request.request));
  downstream.relay_outcome = failed_before_response(UpstreamFailure::timeout);
  EXPECT_FALSE(loop.serve(downstream, request.request));
  EXPECT_EQ(downstream.relayed, 2);
  EXPECT_EQ(downstream.answered, (std::vector<unsigned>{502, 504}));
  EXPECT_FALSE(downstream.answered_keep_alive);
  EXPECT_EQ(loop.counted("api", telemetry::MetricDecision::allowed), 2u);
}

TEST(ServeExchange, GivesAConcurrencyPermitBackWhenTheResponseIsOver) {
  ExchangeLoop loop(
      "limiters: {one: {algorithm: concurrency, limit: 1, key: ip}}\n"
      "routes: [{name: api, limiters: [one]}]");
  ParsedRequest request(kGet);
  RecordingDownstream downstream(request.request);
  for (int i = 0; i < 3; ++i) {
    loop.serve(downstream, request.request);  // each over before the next: one in flight
  }
  EXPECT_EQ(downstream.relayed, 3);
  EXPECT_TRUE(downstream.answered.empty());
}

TEST(ServeExchange, AClientGoneBeforeItsAnswerGetsNothingAndIsNotCounted) {
  ExchangeLoop loop(
      "limiters: {one: {algorithm: concurrency, limit: 1, key: ip}}\n"
      "routes: [{name: api, limiters: [one]}]");
  ParsedRequest request(kGet);
  RecordingDownstream gone(request.request);
  gone.gone_ = true;
  loop.serve(gone, request.request);
  EXPECT_EQ(gone.relayed, 0);
  EXPECT_TRUE(gone.answered.empty());
  EXPECT_EQ(loop.counted("api", telemetry::MetricDecision::allowed), 0u);
  // Its permit came back: the next request is admitted.
  RecordingDownstream next(request.request);
  loop.serve(next, request.request);
  EXPECT_EQ(next.relayed, 1);
}

TEST(ServeExchange, HoldsADelayedRequestThenRelaysIt) {
  ExchangeLoop loop(
      "limiters: {slow: {algorithm: leaky_bucket, rate: 1000/s, burst: 5, mode: delay, max_delay: "
      "1s}}\n"
      "routes: [{name: api, limiters: [slow]}]");
  ParsedRequest request(kGet);
  RecordingDownstream downstream(request.request);
  loop.serve(downstream, request.request);  // admitted at once
  EXPECT_EQ(loop.last_outcome, pipeline::Outcome::allowed);
  loop.serve(downstream, request.request);  // the same instant: held 1 ms, then relayed
  EXPECT_EQ(loop.last_outcome, pipeline::Outcome::delayed);
  EXPECT_EQ(downstream.relayed, 2);
  EXPECT_EQ(loop.counted("api", telemetry::MetricDecision::delayed), 1u);
}

/// A forward-auth check for GET /api/x on api.test, as Traefik sends it.
constexpr std::string_view kCheck =
    "GET /check HTTP/1.1\r\nHost: sluice:8081\r\nX-Forwarded-Method: GET\r\n"
    "X-Forwarded-Uri: /api/x\r\nX-Forwarded-Host: api.test\r\nX-Forwarded-Proto: https\r\n\r\n";

TEST(ServeExchange, DecidesTheRequestACheckDescribesAndForwardsNothing) {
  ExchangeLoop loop(
      "limiters: {two: {algorithm: fixed_window, limit: 2, window: 1m}}\n"
      "routes: [{name: api, match: {path_prefix: /api}, limiters: [two]}]");
  ParsedRequest check(kCheck);
  const DescribedRequest described = describe(check.request);
  ASSERT_EQ(described.problem, "");
  RecordingDownstream downstream(check.request);
  EXPECT_TRUE(loop.serve(downstream, check.request, &described));
  EXPECT_NE(downstream.answer_head().find("RateLimit: \"two\";r=1;t=60\r\n"), std::string::npos)
      << downstream.answer_head();
  EXPECT_TRUE(loop.serve(downstream, check.request, &described));
  EXPECT_TRUE(loop.serve(downstream, check.request, &described));
  EXPECT_EQ(downstream.answered, (std::vector<unsigned>{200, 200, 429}));
  EXPECT_NE(downstream.answer_head().find("Retry-After: 60\r\n"), std::string::npos);
  EXPECT_EQ(downstream.relayed, 0);  // a decision service forwards nothing
  EXPECT_EQ(loop.counted("api", telemetry::MetricDecision::allowed), 2u);
  EXPECT_EQ(loop.counted("api", telemetry::MetricDecision::limited), 1u);
}

TEST(ServeExchange, AdmitsACheckForARequestNoRouteLimits) {
  ExchangeLoop loop("routes: [{name: api, match: {path_prefix: /api}}]");
  ParsedRequest check(
      "GET /check HTTP/1.1\r\nHost: s\r\nX-Original-Method: POST\r\n"
      "X-Original-URI: /elsewhere\r\n\r\n");
  const DescribedRequest described = describe(check.request);
  RecordingDownstream downstream(check.request);
  EXPECT_TRUE(loop.serve(downstream, check.request, &described));
  EXPECT_EQ(downstream.answered, std::vector<unsigned>{200});
  EXPECT_EQ(loop.last_outcome, pipeline::Outcome::no_route);
}

TEST(ServeExchange, PassesOnTheAnswerOfARouteThatAnswersItself) {
  ExchangeLoop loop("routes: [{name: closed, respond: {status: 403, body: closed}}]");
  ParsedRequest check(kCheck);
  const DescribedRequest described = describe(check.request);
  RecordingDownstream downstream(check.request);
  loop.serve(downstream, check.request, &described);
  EXPECT_EQ(downstream.answered, std::vector<unsigned>{403});
}

TEST(ServeExchange, AnswersACheckThatDescribesNoRequest400) {
  ExchangeLoop loop("routes: [{name: api}]");
  ParsedRequest check(
      "GET /check HTTP/1.1\r\nHost: s\r\nX-Forwarded-Uri: /a\r\nX-Original-URI: /b\r\n\r\n");
  const DescribedRequest described = describe(check.request);
  RecordingDownstream downstream(check.request);
  EXPECT_TRUE(loop.serve(downstream, check.request, &described));
  EXPECT_EQ(downstream.answered, std::vector<unsigned>{400});
  EXPECT_EQ(downstream.relayed, 0);
}

}  // namespace
}  // namespace sluice::http
