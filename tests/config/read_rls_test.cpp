#include "config/read_rls.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "config/load_config.hpp"

namespace sluice::config {
namespace {

using namespace std::chrono_literals;
using ::testing::ElementsAre;

std::optional<std::string> no_rls_variables(std::string_view) { return std::nullopt; }

// Nine lines, so that `rls` starts on line 10 of every config below.
constexpr std::string_view kLimiters = R"(upstream: "http://127.0.0.1:9000"
limiters:
  per-ip: {algorithm: fixed_window, limit: 10, window: 1m}
  per-user: {algorithm: token_bucket, rate: 5/s}
  in-flight: {algorithm: concurrency, limit: 4}
  tokens: {algorithm: token_bucket, rate: 100/s, cost: response}
  logins: {algorithm: fixed_window, limit: 5, window: 1m, count_if: {status: [401]}}
routes:
  - {match: {path_prefix: /}, limiters: [per-ip]}
)";

ProxyConfig parse_rls(std::string_view rls) {
  return parse_config(std::string(kLimiters) + std::string(rls), "proxy.yaml", no_rls_variables);
}

std::vector<std::string> rls_errors_of(std::string_view rls) {
  try {
    parse_rls(rls);
  } catch (const ConfigError& error) {
    return error.lines();
  }
  return {};
}

TEST(ReadRls, ReadsDomainsAndTheirRules) {
  const ProxyConfig config = parse_rls(R"(rls:
  - domain: edge
    descriptors:
      - {key: remote_address, limiter: per-ip}
      - {key: plan, value: free, limiter: per-user}
      - {entries: [tenant, user=admin], unlimited: true}
      - {entries: [tenant, user], limiter: per-user}
  - domain: internal
    descriptors: []
)");
  ASSERT_EQ(config.rls.size(), 2u);
  const RlsDomain& edge = config.rls[0];
  EXPECT_EQ(edge.domain, "edge");
  EXPECT_EQ(edge.file, "");
  EXPECT_EQ(edge.at, (Location{11, 5}));
  ASSERT_EQ(edge.rules.size(), 4u);
  EXPECT_THAT(edge.rules[0].entries, ElementsAre(RlsEntry{"remote_address", std::nullopt}));
  EXPECT_EQ(edge.rules[0].limiter, "per-ip");
  EXPECT_EQ(edge.rules[0].at, (Location{13, 9}));
  EXPECT_THAT(edge.rules[1].entries, ElementsAre(RlsEntry{"plan", "free"}));
  EXPECT_EQ(edge.rules[1].limiter, "per-user");
  EXPECT_THAT(edge.rules[2].entries,
              ElementsAre(RlsEntry{"tenant", std::nullopt}, RlsEntry{"user", "admin"}));
  EXPECT_EQ(edge.rules[2].limiter, "");  // unlimited
  EXPECT_THAT(edge.rules[3].entries,
              ElementsAre(RlsEntry{"tenant", std::nullopt}, RlsEntry{"user", std::nullopt}));
  EXPECT_EQ(config.rls[1].domain, "internal");
  EXPECT_TRUE(config.rls[1].rules.empty());
  EXPECT_EQ(config.limiters.size(), 5u);  // none added
}

TEST(ReadRls, AnEntryWithAnEqualsSignAndNothingAfterItAsksForAnEmptyValue) {
  const ProxyConfig config = parse_rls(R"(rls:
  - {domain: edge, descriptors: [{entries: ["k=", "a=b=c"], limiter: per-ip}]}
)");
  EXPECT_THAT(config.rls[0].rules[0].entries, ElementsAre(RlsEntry{"k", ""}, RlsEntry{"a", "b=c"}));
}

TEST(ReadRls, NoRlsIsNoDomain) {
  EXPECT_TRUE(parse_rls("").rls.empty());
  EXPECT_TRUE(parse_rls("rls:\n").rls.empty());
}

TEST(ReadRls, AnUnknownLimiterIsNamedWithTheClosestOne) {
  EXPECT_THAT(rls_errors_of(R"(rls:
  - domain: edge
    descriptors:
      - {key: remote_address, limiter: per-ip}
      - {key: user, limiter: per-usr}
)"),
              ElementsAre("proxy.yaml:14:30: rls[0].descriptors[1].limiter: no limiter is named "
                          "\"per-usr\" (did you mean \"per-user\"?); defined: per-ip, per-user, "
                          "in-flight, tokens and logins"));
}

TEST(ReadRls, ALimiterThatNeedsTheEndOfARequestIsRefused) {
  EXPECT_THAT(
      rls_errors_of(R"(rls:
  - domain: edge
    descriptors:
      - {key: a, limiter: in-flight}
      - {key: b, limiter: tokens}
      - {key: c, limiter: logins}
)"),
      ElementsAre(
          "proxy.yaml:13:27: rls[0].descriptors[0].limiter: the decision service never learns "
          "how a request ends: limiter \"in-flight\" is a concurrency limiter, whose permits "
          "come back when a request ends",
          "proxy.yaml:14:27: rls[0].descriptors[1].limiter: the decision service never learns "
          "how a request ends: limiter \"tokens\" is charged what the response cost (cost: "
          "response)",
          "proxy.yaml:15:27: rls[0].descriptors[2].limiter: the decision service never learns "
          "how a request ends: limiter \"logins\" is charged by the response's status "
          "(count_if)"));
}

TEST(ReadRls, RulesWithTheSameEntriesInOneDomainAreRefused) {
  EXPECT_THAT(rls_errors_of(R"(rls:
  - domain: edge
    descriptors:
      - {entries: [tenant, user=admin], limiter: per-ip}
      - {key: tenant, limiter: per-ip}
      - {entries: [tenant, "user=admin"], limiter: per-user}
  - domain: other
    descriptors:
      - {entries: [tenant, user=admin], limiter: per-ip}
)"),
              ElementsAre("proxy.yaml:15:9: rls[0].descriptors[2]: the same entries as "
                          "rls[0].descriptors[0]"));
}

TEST(ReadRls, ADomainGivenTwiceIsRefused) {
  EXPECT_THAT(rls_errors_of(R"(rls:
  - {domain: edge, descriptors: []}
  - {domain: other, descriptors: []}
  - {domain: edge, descriptors: []}
)"),
              ElementsAre("proxy.yaml:13:5: rls[2]: the domain \"edge\" is taken by rls[0]"));
}

TEST(ReadRls, ShapeErrorsNameTheKey) {
  EXPECT_THAT(
      rls_errors_of(R"(rls:
  - domain: edge
    descriptors:
      - {key: a, entries: [b], limiter: per-ip}
      - {limiter: per-ip}
      - {entries: [a], value: x, limiter: per-ip}
      - {entries: ["=x"], limiter: per-ip}
      - {key: a, limiter: per-ip, unlimited: true}
      - {key: a}
      - {key: a, limiter: per-ip, limit: 5}
      - {entries: [], limiter: per-ip}
  - {descriptors: [], algorithm: token_bucket}
  - {domain: x, descriptors: {key: a}}
  - "edge"
  - 
rls_typo: 1
)"),
      ElementsAre(
          "proxy.yaml:13:27: rls[0].descriptors[0].entries: give key (with value) or entries, "
          "not both",
          "proxy.yaml:14:9: rls[0].descriptors[1]: give key (with value) or entries: the "
          "descriptor it decides",
          "proxy.yaml:15:31: rls[0].descriptors[2].value: goes with key; in entries, write "
          "key=value",
          "proxy.yaml:16:20: rls[0].descriptors[3].entries: \"=x\" has no key (key or key=value)",
          "proxy.yaml:17:46: rls[0].descriptors[4].unlimited: give limiter or unlimited: true, "
          "not both",
          "proxy.yaml:18:9: rls[0].descriptors[5].limiter: missing",
          "proxy.yaml:19:35: rls[0].descriptors[6]: unknown key \"limit\" (did you mean "
          "\"limiter\"?); accepted keys: key, value, entries, limiter or unlimited",
          "proxy.yaml:20:19: rls[0].descriptors[7].entries: an empty list: give at least one "
          "key",
          "proxy.yaml:21:5: rls[1].domain: missing",
          "proxy.yaml:21:34: rls[1].algorithm: applies to envoy_config only (the algorithm of "
          "the limiters its limits become); a descriptor written here names its limiter",
          "proxy.yaml:22:30: rls[2].descriptors: expected a list of {key, value, limiter} or "
          "{entries, limiter}",
          "proxy.yaml:23:5: rls[3]: expected a mapping of keys",
          "proxy.yaml:25:1: unknown key \"rls_typo\"; accepted keys: listen, tls, admin, "
          "admin_token, threads, max_connections, upstream, upstream_tls, http2, "
          "trusted_proxies, timeouts, limits_headers, log, store, auth, limiters, deny, ban, "
          "routes, watch, top_keys, decide or rls",
          // yaml-cpp places an empty item where the next token starts
          "proxy.yaml:25:1: rls[4]: an empty domain"));
}

TEST(ReadRls, AnEnvoyConfigFileIsReadWithTheAlgorithmAsked) {
  const std::string file = SLUICE_SOURCE_DIR "/tests/data/envoy_ratelimit/edge.yaml";
  const ProxyConfig config =
      parse_rls("rls:\n  - {envoy_config: \"" + file + "\", algorithm: token_bucket}\n");
  ASSERT_EQ(config.rls.size(), 1u);
  EXPECT_EQ(config.rls[0].domain, "edge");
  EXPECT_EQ(config.rls[0].file, file);
  EXPECT_EQ(config.rls[0].at, (Location{11, 5}));
  ASSERT_EQ(config.limiters.size(), 10u);  // five written, five from the file
  const LimiterConfig& first = config.limiters[5];
  EXPECT_EQ(first.name, "rls:edge.remote_address");
  EXPECT_EQ(first.options.algorithm, limiter::AlgorithmKind::token_bucket);
  EXPECT_EQ(first.options.rate, (limiter::Rate{.permits = 60, .period = 1min}));
  EXPECT_EQ(first.options.burst, 60.0);
  EXPECT_TRUE(first.valid);
}

TEST(ReadRls, AnEnvoyConfigFilesProblemsAreReportedWhereItIsNamedWithItsOwnLines) {
  const std::string edge = SLUICE_SOURCE_DIR "/tests/data/envoy_ratelimit/edge.yaml";
  const std::string broken = SLUICE_SOURCE_DIR "/tests/data/envoy_ratelimit/broken.yaml";
  EXPECT_THAT(
      rls_errors_of("rls:\n  - {domain: edge, descriptors: []}\n  - envoy_config: \"" + edge +
                    "\"\n  - envoy_config: \"" + broken +
                    "\"\n  - {envoy_config: missing.yaml, algorithm: concurrency}\n"
                    "  - {envoy_config: missing.yaml, domain: x}\n"),
      ElementsAre(
          "proxy.yaml:12:5: rls[1]: the domain \"edge\" is taken by rls[0]",
          "proxy.yaml:13:19: rls[2].envoy_config: " + broken +
              ":5:13: descriptors[0].rate_limit.unit: \"fortnight\" is not one of second, "
              "minute, hour, day, week, month or year",
          "proxy.yaml:13:19: rls[2].envoy_config: " + broken +
              ":7:7: descriptors[0].rate_limit: unknown key \"burst\"; accepted keys: unit, "
              "requests_per_unit, unlimited, name or replaces",
          "proxy.yaml:14:45: rls[3].algorithm: concurrency counts requests in flight, and the "
          "decision service never learns how a request ends",
          "proxy.yaml:15:20: rls[4].envoy_config: cannot read \"missing.yaml\"",
          "proxy.yaml:15:42: rls[4].domain: not with envoy_config: the file gives the domain "
          "and its descriptors"));
}

TEST(CheckDecide, ForwardAuthRefusesRoutesWhoseLimitersNeedTheEndOfTheRequest) {
  const auto errors = [](std::string_view decide) {
    try {
      parse_config(std::string(decide) + R"(
upstream: "http://127.0.0.1:9000"
limiters:
  per-ip: {algorithm: fixed_window, limit: 10, window: 1m}
  in-flight: {algorithm: concurrency, limit: 4}
  tokens: {algorithm: token_bucket, rate: 100/s, cost: response}
routes:
  - {match: {path_prefix: /}, limiters: [per-ip, in-flight, tokens], cost_from: {usage: openai}}
)",
                   "proxy.yaml", no_rls_variables);
    } catch (const ConfigError& error) {
      return error.lines();
    }
    return std::vector<std::string>();
  };
  EXPECT_THAT(errors(""), ElementsAre());
  EXPECT_THAT(errors(R"(decide: "")"), ElementsAre());
  EXPECT_THAT(errors(R"(decide: "127.0.0.1:8081")"),
              ElementsAre("proxy.yaml:8:41: routes[0].limiters: forward auth on the decide port "
                          "has no end of request: limiter \"in-flight\" is a concurrency limiter, "
                          "whose permits come back when a request ends",
                          "proxy.yaml:8:41: routes[0].limiters: forward auth on the decide port "
                          "has no end of request: limiter \"tokens\" is charged what the response "
                          "cost (cost: response)"));
}

}  // namespace
}  // namespace sluice::config
