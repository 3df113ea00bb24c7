#include "proxy/pipeline/pipeline.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <deque>
#include <thread>

#include "tests/support/manual_clock.hpp"
#include "tests/support/pipeline_fixture.hpp"

namespace sluice::pipeline {
namespace {

using namespace std::chrono_literals;
using Request = test::PipelineFixture::Request;
using test::at;

std::vector<std::string> names_of(const Decision& decision, bool refused) {
  std::vector<std::string> names;
  for (const LimiterReport& report : decision.applied()) {
    if (report.verdict.admitted != refused) {
      names.push_back(report.limiter->name);
    }
  }
  return names;
}

TEST(Pipeline, LimitsPerClientAcrossRoutesThatShareALimiter) {
  test::PipelineFixture fixture(R"(
upstream: http://127.0.0.1:9000
limiters:
  per-ip: {algorithm: fixed_window, limit: 3, window: 1m}
routes:
  - {name: a, match: {path: /a}, limiters: [per-ip]}
  - {name: b, match: {path: /b}, limiters: [per-ip]}
)");
  EXPECT_EQ(fixture.send({.target = "/a"}, at(0s)).outcome, Outcome::allowed);
  EXPECT_EQ(fixture.send({.target = "/b"}, at(1s)).outcome, Outcome::allowed);
  const Decision third = fixture.send({.target = "/a"}, at(2s));
  EXPECT_EQ(third.outcome, Outcome::allowed);
  EXPECT_EQ(third.status, 0U);  // forwarded: the upstream answers
  ASSERT_EQ(third.applied().size(), 1U);
  EXPECT_EQ(third.applied()[0].status.remaining, 0U);
  const Decision fourth = fixture.send({.target = "/b"}, at(3s));
  EXPECT_EQ(fourth.outcome, Outcome::limited);
  EXPECT_EQ(fourth.status, 429U);
  EXPECT_EQ(fourth.retry_after, 57s);
  // Another client has its own bucket.
  EXPECT_EQ(fixture.send({.target = "/a", .peer = "198.51.100.8"}, at(3s)).outcome,
            Outcome::allowed);
  EXPECT_EQ(fixture.send({.target = "/c"}, at(3s)).outcome, Outcome::no_route);
  EXPECT_EQ(fixture.send({.target = "/c"}, at(3s)).status, 404U);
}

TEST(Pipeline, ATierKeyChoosesParametersAndAnOverrideComesFirst) {
  test::PipelineFixture fixture(R"(
upstream: http://127.0.0.1:9000
limiters:
  per-ip:
    algorithm: fixed_window
    limit: 1
    window: 1m
    tier: "header:X-Plan"
    tiers: {gold: {limit: 3}}
    overrides: {"198.51.100.9": {limit: 2}}
routes: [{name: a, limiters: [per-ip]}]
)");
  const pipeline::Header gold{"X-Plan", "gold"};
  const auto remaining = [&](const char* peer, bool is_gold, int second) {
    Request request{.peer = peer};
    if (is_gold) {
      request.headers.push_back(gold);
    }
    const Decision decision = fixture.send(request, at(std::chrono::seconds(second)));
    return decision.outcome == Outcome::limited
               ? -1
               : static_cast<int>(decision.applied()[0].status.remaining);
  };
  EXPECT_EQ(remaining("198.51.100.7", true, 0), 2);
  EXPECT_EQ(remaining("198.51.100.7", true, 1), 1);
  EXPECT_EQ(remaining("198.51.100.7", true, 2), 0);
  EXPECT_EQ(remaining("198.51.100.7", true, 3), -1);
  // Without the tier's value: the limiter's own parameters, and a count of their own.
  EXPECT_EQ(remaining("198.51.100.8", false, 3), 0);
  EXPECT_EQ(remaining("198.51.100.8", false, 4), -1);
  // An override for the key wins over its tier.
  EXPECT_EQ(remaining("198.51.100.9", true, 4), 1);
  EXPECT_EQ(remaining("198.51.100.9", true, 5), 0);
  EXPECT_EQ(remaining("198.51.100.9", true, 6), -1);
}

TEST(Pipeline, ChargesAllLimitersOrNoneAndSkipsThoseWithoutAKey) {
  test::PipelineFixture fixture(R"(
upstream: http://127.0.0.1:9000
limiters:
  per-ip: {algorithm: fixed_window, limit: 10, window: 1m}
  api-key: {algorithm: token_bucket, rate: 1/m, burst: 2, key: "header:X-Api-Key"}
routes:
  - {name: api, limiters: [per-ip, api-key]}
)");
  const Request keyed{.headers = {{"X-Api-Key", "k1"}}};
  EXPECT_EQ(fixture.send(keyed, at(0s)).outcome, Outcome::allowed);
  EXPECT_EQ(fixture.send(keyed, at(0s)).outcome, Outcome::allowed);
  const Decision refused = fixture.send(keyed, at(0s));
  EXPECT_EQ(refused.outcome, Outcome::limited);
  EXPECT_EQ(names_of(refused, true), std::vector<std::string>{"api-key"});
  EXPECT_EQ(refused.applied()[0].status.remaining, 8U);  // per-ip was not charged for it
  // Without the header the api-key limiter does not apply; per-ip still does.
  const Decision keyless = fixture.send({}, at(0s));
  EXPECT_EQ(keyless.outcome, Outcome::allowed);
  ASSERT_EQ(keyless.applied().size(), 1U);
  EXPECT_EQ(keyless.applied()[0].limiter->name, "per-ip");
  EXPECT_EQ(keyless.applied()[0].status.remaining, 7U);
}

TEST(Pipeline, DeniesListedNetworksAndSpoofingDoesNotHelp) {
  test::PipelineFixture fixture(R"(
upstream: http://127.0.0.1:9000
trusted_proxies: ["10.0.0.0/8"]
deny: ["203.0.113.0/24"]
routes: [{name: all}]
)");
  EXPECT_EQ(fixture.send({.peer = "203.0.113.5"}, at(0s)).outcome, Outcome::denied);
  EXPECT_EQ(fixture.send({.peer = "203.0.113.5"}, at(0s)).status, 403U);
  // Through a trusted proxy the forwarded client is judged...
  EXPECT_EQ(
      fixture.send({.headers = {{"X-Forwarded-For", "203.0.113.5"}}, .peer = "10.0.0.2"}, at(0s))
          .outcome,
      Outcome::denied);
  // ...but a denied client cannot claim another address from outside.
  EXPECT_EQ(
      fixture.send({.headers = {{"X-Forwarded-For", "192.0.2.1"}}, .peer = "203.0.113.5"}, at(0s))
          .outcome,
      Outcome::denied);
  EXPECT_EQ(fixture.send({.peer = "192.0.2.1"}, at(0s)).outcome, Outcome::allowed);
}

TEST(Pipeline, BansAClientLimitedTooOften) {
  test::PipelineFixture fixture(R"(
upstream: http://127.0.0.1:9000
ban: {after: 3, within: 1m, for: 10m}
limiters:
  per-ip: {algorithm: fixed_window, limit: 1, window: 1h}
routes: [{name: all, limiters: [per-ip]}]
)");
  EXPECT_EQ(fixture.send({}, at(0s)).outcome, Outcome::allowed);
  EXPECT_EQ(fixture.send({}, at(1s)).outcome, Outcome::limited);  // strike 1
  EXPECT_EQ(fixture.send({}, at(2s)).outcome, Outcome::limited);  // strike 2
  EXPECT_EQ(fixture.send({}, at(3s)).outcome, Outcome::limited);  // strike 3: banned
  const Decision banned = fixture.send({}, at(4s));
  EXPECT_EQ(banned.outcome, Outcome::denied);
  EXPECT_TRUE(banned.banned);
  EXPECT_EQ(banned.status, 403U);
  EXPECT_EQ(banned.retry_after, 10min - 1s);
  EXPECT_TRUE(fixture.send({}, at(3s + 10min) - 1ns).banned);
  EXPECT_FALSE(fixture.send({}, at(3s + 10min)).banned);
  EXPECT_EQ(fixture.send({.peer = "192.0.2.1"}, at(4s)).outcome, Outcome::allowed);
}

TEST(Pipeline, ShadowLimitersAreReportedNeverEnforced) {
  test::PipelineFixture fixture(R"(
upstream: http://127.0.0.1:9000
limiters:
  strict: {algorithm: fixed_window, limit: 1, window: 1m, shadow: true}
routes: [{name: all, limiters: [strict]}]
)");
  EXPECT_TRUE(names_of(fixture.send({}, at(0s)), true).empty());
  const Decision second = fixture.send({}, at(1s));
  EXPECT_EQ(second.outcome, Outcome::allowed);
  EXPECT_EQ(names_of(second, true), std::vector<std::string>{"strict"});
}

TEST(Pipeline, OverridesGiveAKeyItsOwnParameters) {
  test::PipelineFixture fixture(R"(
upstream: http://127.0.0.1:9000
limiters:
  per-key:
    algorithm: fixed_window
    limit: 1
    window: 1m
    key: "header:X-Api-Key"
    overrides: {"premium-key": {limit: 3}}
routes: [{name: all, limiters: [per-key]}]
)");
  const Request premium{.headers = {{"X-Api-Key", "premium-key"}}};
  const Request basic{.headers = {{"X-Api-Key", "basic-key"}}};
  int premium_admitted = 0;
  int basic_admitted = 0;
  for (int i = 0; i < 5; ++i) {
    premium_admitted += fixture.send(premium, at(0s)).outcome == Outcome::allowed ? 1 : 0;
    basic_admitted += fixture.send(basic, at(0s)).outcome == Outcome::allowed ? 1 : 0;
  }
  EXPECT_EQ(premium_admitted, 3);
  EXPECT_EQ(basic_admitted, 1);
}

TEST(Pipeline, DelaysAndAnswersWithTheLimitersStatus) {
  test::PipelineFixture fixture(R"(
upstream: http://127.0.0.1:9000
limiters:
  shaped: {algorithm: leaky_bucket, rate: 10/s, burst: 2, mode: delay, max_delay: 1s, status: 503}
routes: [{name: all, limiters: [shaped]}]
)");
  EXPECT_EQ(fixture.send({}, at(0s)).outcome, Outcome::allowed);
  const Decision second = fixture.send({}, at(0s));
  EXPECT_EQ(second.outcome, Outcome::delayed);
  EXPECT_EQ(second.hold, 100ms);
  EXPECT_EQ(fixture.send({}, at(0s)).hold, 200ms);
  const Decision overflow = fixture.send({}, at(0s));
  EXPECT_EQ(overflow.outcome, Outcome::limited);
  EXPECT_EQ(overflow.status, 503U);
}

TEST(Pipeline, HoldsConcurrencyPermitsUntilReleased) {
  test::PipelineFixture fixture(R"(
upstream: http://127.0.0.1:9000
limiters:
  inflight: {algorithm: concurrency, limit: 2}
routes: [{name: all, limiters: [inflight]}]
)");
  const Decision first = fixture.send({}, at(0s));
  const Decision second = fixture.send({}, at(0s));
  EXPECT_EQ(first.permit_count, 1U);
  EXPECT_EQ(fixture.send({}, at(0s)).outcome, Outcome::limited);
  Pipeline::release_locally(first);
  EXPECT_EQ(fixture.send({}, at(0s)).outcome, Outcome::allowed);
  Pipeline::release_locally(second);
}

TEST(Pipeline, UsesTheGivenCostOverTheRoutes) {
  test::PipelineFixture fixture(R"(
upstream: http://127.0.0.1:9000
limiters:
  per-ip: {algorithm: fixed_window, limit: 10, window: 1m}
routes: [{name: all, limiters: [per-ip], cost: 4}]
)");
  EXPECT_EQ(fixture.send({}, at(0s)).applied()[0].status.remaining, 6U);
  EXPECT_EQ(fixture.send({}, at(0s), 5).applied()[0].status.remaining, 1U);
  EXPECT_EQ(fixture.send({}, at(0s)).outcome, Outcome::limited);
}

TEST(Pipeline, ChargesWhatTheResponseCostOnceItIsOver) {
  // 100 tokens a minute (one every 600 ms): admitted while the budget is above zero, then in
  // debt for what the response said it cost.
  test::PipelineFixture fixture(R"(
upstream: http://127.0.0.1:9000
limiters:
  tokens: {algorithm: token_bucket, rate: 100/m, burst: 100, cost: response}
routes: [{name: all, limiters: [tokens], cost_from: {header: X-Tokens}}]
)");
  const Decision first = fixture.send({}, at(0s));
  EXPECT_EQ(first.outcome, Outcome::allowed);
  EXPECT_EQ(first.applied()[0].status.remaining, 100U);  // nothing taken before the response
  ASSERT_EQ(first.later_count, 1U);
  Pipeline::settle_locally(first, {.status = 200, .cost = 150}, at(0s));
  const Decision in_debt = fixture.send({}, at(0s));
  EXPECT_EQ(in_debt.outcome, Outcome::limited);
  EXPECT_EQ(in_debt.retry_after, 30600ms);  // 50 tokens of debt and one to take
  EXPECT_EQ(fixture.send({}, at(30600ms)).outcome, Outcome::allowed);
}

TEST(Pipeline, ReservesTheEstimateAndSettlesTheDifference) {
  test::PipelineFixture fixture(R"(
upstream: http://127.0.0.1:9000
limiters:
  tokens: {algorithm: fixed_window, limit: 100, window: 1m, cost: response}
routes: [{name: all, limiters: [tokens], cost_from: {usage: openai, estimate: 40}}]
)");
  const Decision first = fixture.send({}, at(0s));
  EXPECT_EQ(first.applied()[0].status.remaining, 60U);
  Pipeline::settle_locally(first, {.status = 200, .cost = 10}, at(1s));  // 30 given back
  const Decision second = fixture.send({}, at(1s));
  EXPECT_EQ(second.applied()[0].status.remaining, 50U);  // 90, less this one's estimate
  // A response that said nothing is charged the estimate: what was reserved.
  EXPECT_EQ(owed_for(*second.route, second.later[0], {.status = 200, .cost = std::nullopt}), 40U);
  Pipeline::settle_locally(second, {.status = 200, .cost = std::nullopt}, at(1s));
  EXPECT_EQ(fixture.send({}, at(1s)).applied()[0].status.remaining, 10U);
  // The budget must hold the estimate: 10 left does not.
  EXPECT_EQ(fixture.send({}, at(1s)).outcome, Outcome::limited);
}

TEST(Pipeline, CountsOnlyResponsesWithTheListedStatuses) {
  // Failed logins: 2 per window; successful ones are never counted.
  test::PipelineFixture fixture(R"(
upstream: http://127.0.0.1:9000
limiters:
  failed-logins: {algorithm: sliding_log, limit: 2, window: 15m, count_if: {status: [401, 403]}}
routes: [{name: login, limiters: [failed-logins]}]
)");
  for (int i = 0; i < 5; ++i) {
    const Decision ok = fixture.send({}, at(0s));
    ASSERT_EQ(ok.outcome, Outcome::allowed);
    Pipeline::settle_locally(ok, {.status = 200, .cost = std::nullopt}, at(0s));
  }
  Pipeline::settle_locally(fixture.send({}, at(1s)), {.status = 401, .cost = std::nullopt}, at(1s));
  // A client gone before its response is not counted either.
  Pipeline::settle_locally(fixture.send({}, at(1s)), {.status = 0, .cost = std::nullopt}, at(1s));
  Pipeline::settle_locally(fixture.send({}, at(2s)), {.status = 403, .cost = std::nullopt}, at(2s));
  const Decision refused = fixture.send({}, at(3s));
  EXPECT_EQ(refused.outcome, Outcome::limited);
  EXPECT_EQ(refused.retry_after, 15min - 2s);  // until the first failure leaves the window
}

TEST(Pipeline, ChargesAfterTheResponseOvershootByNoMoreThanWhatIsInFlight) {
  // A budget of 1000 tokens, calls of 300 each, at most 4 in flight per key (a concurrency
  // limiter beside the budget). Each call is admitted while the budget is above zero, and
  // charged when it ends: the budget is passed by less than 4 calls' cost.
  test::PipelineFixture fixture(R"(
upstream: http://127.0.0.1:9000
limiters:
  tokens: {algorithm: token_bucket, rate: 1/h, burst: 1000, cost: response}
  in-flight: {algorithm: concurrency, limit: 4}
routes: [{name: all, limiters: [tokens, in-flight], cost_from: {header: X-Tokens}}]
)");
  std::deque<Decision> in_flight;
  int admitted = 0;
  for (int step = 0; step < 20; ++step) {
    // As many calls as are let in; then the oldest ends.
    for (Decision call = fixture.send({}, at(0s)); call.outcome == Outcome::allowed;
         call = fixture.send({}, at(0s))) {
      in_flight.push_back(call);
      ++admitted;
    }
    if (in_flight.empty()) {
      break;
    }
    Pipeline::settle_locally(in_flight.front(), {.status = 200, .cost = 300}, at(0s));
    Pipeline::release_locally(in_flight.front());
    in_flight.pop_front();
  }
  // 4 at once, then one more as each of the first three ends (700, 400 and 100 left): 7 calls,
  // 2100 tokens, 1100 past the budget: under 4 × 300.
  EXPECT_EQ(admitted, 7);
  EXPECT_LT(admitted * 300 - 1000, 4 * 300);
}

TEST(Pipeline, AnswersRespondRoutesWithTheirStatus) {
  test::PipelineFixture fixture(R"(
routes: [{name: status, match: {path: /status}, respond: {status: 204}}]
)");
  const Decision decision = fixture.send({.target = "/status"}, at(0s));
  EXPECT_EQ(decision.outcome, Outcome::allowed);
  EXPECT_EQ(decision.status, 204U);
}

// Threads deciding for one client through two limiters admit exactly the tighter limit, under
// ThreadSanitizer too (the name puts it in test.sh's tsan run).
TEST(ConcurrentDecisions, ThePipelineAdmitsExactlyTheLimitFromManyThreads) {
  test::PipelineFixture fixture(R"(
upstream: http://127.0.0.1:9000
ban: {after: 1000000, within: 1h, for: 1m}
limiters:
  per-ip: {algorithm: sliding_window, limit: 5000, window: 1h}
  per-key: {algorithm: sliding_log, limit: 300, window: 1h, key: "header:X-Api-Key"}
routes: [{name: all, match: {path_regex: "^/api/"}, limiters: [per-ip, per-key]}]
)");
  const Request request{.target = "/api/x", .headers = {{"X-Api-Key", "k"}}};
  std::atomic<int> admitted{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 2000; ++i) {
        if (fixture.send(request, at(0s)).outcome == Outcome::allowed) {
          admitted.fetch_add(1, std::memory_order_relaxed);
        }
      }
    });
  }
  for (std::thread& thread : threads) {
    thread.join();
  }
  EXPECT_EQ(admitted.load(), 300);
  EXPECT_EQ(fixture.send({.target = "/api/x"}, at(0s)).applied()[0].status.remaining, 5000U - 301U);
}

}  // namespace
}  // namespace sluice::pipeline

namespace sluice::test {
namespace {

/// An Envoy rate-limit request decided with the memory limiters, as the decision service does.
struct RlsAnswer {
  pipeline::DescriptorsPrepared prepared{};
  pipeline::Decision decision;
  std::vector<std::size_t> report_of;
};

RlsAnswer ask_rls(pipeline::Pipeline& pipeline, std::string_view domain,
                  const std::vector<std::vector<pipeline::DescriptorEntry>>& descriptors,
                  limiter::Permits cost, limiter::TimePoint now) {
  std::vector<pipeline::Descriptor> views(descriptors.begin(), descriptors.end());
  RlsAnswer answer;
  answer.report_of.resize(descriptors.size());
  pipeline::Charges charges;
  answer.prepared = pipeline.prepare_descriptors(domain, views, cost, now, answer.decision, charges,
                                                 answer.report_of);
  if (answer.prepared == pipeline::DescriptorsPrepared::charges) {
    pipeline.conclude(answer.decision, charges, pipeline::Pipeline::charge_locally(charges, now),
                      now);
  }
  return answer;
}

constexpr std::string_view kRlsConfig =
    "limiters:\n"
    "  per-ip: {algorithm: fixed_window, limit: 5, window: 1m}\n"
    "  free-plan: {algorithm: fixed_window, limit: 1, window: 1m}\n"
    "  per-user: {algorithm: token_bucket, rate: 1/s, burst: 3}\n"
    "routes: [{name: all}]\n"
    "rls:\n"
    "  - domain: edge\n"
    "    descriptors:\n"
    "      - {key: remote_address, limiter: per-ip}\n"
    "      - {key: plan, value: free, limiter: free-plan}\n"
    "      - {key: plan, unlimited: true}\n"
    "      - {entries: [tenant, user], limiter: per-user}\n";

using Entry = pipeline::DescriptorEntry;

TEST(PipelineDescriptors, DecidesEveryDescriptorAllOrNothing) {
  PipelineFixture fixture("upstream: \"http://127.0.0.1:9\"\n" + std::string(kRlsConfig));
  const limiter::TimePoint now{};
  const std::vector<std::vector<Entry>> free_caller{{Entry{"remote_address", "10.0.0.1"}},
                                                    {Entry{"plan", "free"}}};
  RlsAnswer first = ask_rls(fixture.pipeline(), "edge", free_caller, 1, now);
  ASSERT_EQ(first.prepared, pipeline::DescriptorsPrepared::charges);
  EXPECT_EQ(first.decision.outcome, pipeline::Outcome::allowed);
  EXPECT_EQ(first.decision.reports[first.report_of[0]].status.remaining, 4u);
  EXPECT_EQ(first.decision.reports[first.report_of[1]].status.remaining, 0u);
  // free-plan refuses: per-ip is not charged either.
  RlsAnswer second = ask_rls(fixture.pipeline(), "edge", free_caller, 1, now);
  EXPECT_EQ(second.decision.outcome, pipeline::Outcome::limited);
  EXPECT_FALSE(second.decision.reports[second.report_of[1]].verdict.admitted);
  EXPECT_EQ(second.decision.reports[second.report_of[0]].status.remaining, 4u);
  // A paying caller's plan is unlimited: its address alone counts, and the 4 left are there.
  RlsAnswer paying =
      ask_rls(fixture.pipeline(), "edge",
              {{Entry{"remote_address", "10.0.0.1"}}, {Entry{"plan", "gold"}}}, 4, now);
  EXPECT_EQ(paying.decision.outcome, pipeline::Outcome::allowed);
  EXPECT_EQ(paying.report_of[1], pipeline::kNoReport);
  EXPECT_EQ(paying.decision.reports[paying.report_of[0]].status.remaining, 0u);
}

TEST(PipelineDescriptors, KeysACompositeDescriptorByItsValues) {
  PipelineFixture fixture("upstream: \"http://127.0.0.1:9\"\n" + std::string(kRlsConfig));
  const limiter::TimePoint now{};
  const std::vector<std::vector<Entry>> bob{{Entry{"tenant", "acme"}, Entry{"user", "bob"}}};
  EXPECT_EQ(ask_rls(fixture.pipeline(), "edge", bob, 3, now).decision.outcome,
            pipeline::Outcome::allowed);
  EXPECT_EQ(ask_rls(fixture.pipeline(), "edge", bob, 1, now).decision.outcome,
            pipeline::Outcome::limited);
  // Another user of the tenant has a bucket of its own, as peek shows under its key text.
  EXPECT_EQ(
      ask_rls(fixture.pipeline(), "edge", {{Entry{"tenant", "acme"}, Entry{"user", "eve"}}}, 3, now)
          .decision.outcome,
      pipeline::Outcome::allowed);
  EXPECT_EQ(fixture.pipeline().peek("per-user", "acme+bob", now)->remaining, 0u);
}

TEST(PipelineDescriptors, AnswersOKForWhatNoRuleDecides) {
  PipelineFixture fixture("upstream: \"http://127.0.0.1:9\"\n" + std::string(kRlsConfig));
  const limiter::TimePoint now{};
  EXPECT_EQ(ask_rls(fixture.pipeline(), "other", {{Entry{"remote_address", "10.0.0.1"}}}, 1, now)
                .prepared,
            pipeline::DescriptorsPrepared::unknown_domain);
  EXPECT_EQ(ask_rls(fixture.pipeline(), "edge", {{Entry{"path", "/x"}}}, 1, now).prepared,
            pipeline::DescriptorsPrepared::none);
}

TEST(PipelineDescriptors, AddsUpOneLimitersKeyAndRefusesTwoKeysOfIt) {
  PipelineFixture fixture("upstream: \"http://127.0.0.1:9\"\n" + std::string(kRlsConfig));
  const limiter::TimePoint now{};
  RlsAnswer twice = ask_rls(
      fixture.pipeline(), "edge",
      {{Entry{"remote_address", "10.0.0.1"}}, {Entry{"remote_address", "10.0.0.1"}}}, 2, now);
  EXPECT_EQ(twice.report_of[0], twice.report_of[1]);
  EXPECT_EQ(twice.decision.reports[twice.report_of[0]].status.remaining, 1u);  // 5 - 2 - 2
  EXPECT_EQ(ask_rls(fixture.pipeline(), "edge",
                    {{Entry{"remote_address", "10.0.0.1"}}, {Entry{"remote_address", "10.0.0.2"}}},
                    1, now)
                .prepared,
            pipeline::DescriptorsPrepared::limiter_twice);
}

}  // namespace
}  // namespace sluice::test
