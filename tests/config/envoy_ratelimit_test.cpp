#include "config/envoy_ratelimit.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

namespace sluice::config {
namespace {

using namespace std::chrono_literals;
using limiter::AlgorithmKind;
using ::testing::ElementsAre;

std::string envoy_fixture(const std::string& name) {
  std::ifstream in(SLUICE_SOURCE_DIR "/tests/data/envoy_ratelimit/" + name);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

struct EnvoyRead {
  std::optional<RlsDomain> domain;
  std::vector<LimiterConfig> limiters;
  std::vector<std::string> errors;
};

EnvoyRead read_envoy(std::string_view yaml, AlgorithmKind algorithm = AlgorithmKind::fixed_window,
                     std::vector<LimiterConfig> limiters = {}) {
  EnvoyRead result;
  result.limiters = std::move(limiters);
  Diagnostics diagnostics("ratelimit.yaml");
  result.domain =
      read_envoy_ratelimit(yaml, "ratelimit.yaml", algorithm, 5000, result.limiters, diagnostics);
  try {
    diagnostics.throw_if_any();
  } catch (const ConfigError& error) {
    result.errors = error.lines();
  }
  return result;
}

TEST(EnvoyRatelimit, EachRateLimitBecomesARuleForThePathToItAndALimiter) {
  const EnvoyRead read_edge = read_envoy(envoy_fixture("edge.yaml"));
  ASSERT_THAT(read_edge.errors, ElementsAre());
  ASSERT_TRUE(read_edge.domain);
  const RlsDomain& edge = *read_edge.domain;
  EXPECT_EQ(edge.domain, "edge");
  EXPECT_EQ(edge.file, "ratelimit.yaml");
  ASSERT_EQ(edge.rules.size(), 6u);
  const std::optional<std::string> any;

  EXPECT_THAT(edge.rules[0].entries, ElementsAre(RlsEntry{"remote_address", any}));
  EXPECT_EQ(edge.rules[0].limiter, "rls:edge.remote_address");
  EXPECT_EQ(edge.rules[0].at, (Location{5, 5}));

  EXPECT_THAT(edge.rules[1].entries, ElementsAre(RlsEntry{"plan", "free"}));
  EXPECT_EQ(edge.rules[1].limiter, "rls:edge.plan_free");

  EXPECT_THAT(edge.rules[2].entries, ElementsAre(RlsEntry{"plan", "free"}, RlsEntry{"user", any}));
  EXPECT_EQ(edge.rules[2].limiter, "rls:edge.plan_free.user");
  EXPECT_EQ(edge.rules[2].name, "per_user");
  EXPECT_EQ(edge.rules[2].at, (Location{17, 9}));

  EXPECT_THAT(edge.rules[3].entries,
              ElementsAre(RlsEntry{"plan", "free"}, RlsEntry{"user", "admin"}));
  EXPECT_EQ(edge.rules[3].limiter, "");  // unlimited

  EXPECT_THAT(edge.rules[4].entries, ElementsAre(RlsEntry{"path", "/upload"}));
  EXPECT_EQ(edge.rules[4].limiter, "rls:edge.path_/upload");

  EXPECT_THAT(edge.rules[5].entries,
              ElementsAre(RlsEntry{"tenant", "acme"}, RlsEntry{"user", any}));
  EXPECT_EQ(edge.rules[5].limiter, "rls:edge.tenant_acme.user");
  EXPECT_EQ(edge.rules[5].name, "");
  EXPECT_THAT(edge.rules[5].replaces, ElementsAre("per_user"));

  ASSERT_EQ(read_edge.limiters.size(), 5u);
  const auto expect_window = [&](std::size_t i, std::uint64_t limit, limiter::Duration window) {
    const LimiterConfig& limiter = read_edge.limiters[i];
    EXPECT_EQ(limiter.options.algorithm, AlgorithmKind::fixed_window) << limiter.name;
    EXPECT_EQ(limiter.options.limit, limit) << limiter.name;
    EXPECT_EQ(limiter.options.window, window) << limiter.name;
    EXPECT_EQ(limiter.options.calendar, limiter::Calendar::none) << limiter.name;
    EXPECT_EQ(limiter.options.max_keys, 5000u) << limiter.name;
    EXPECT_EQ(limiter.key.text, "descriptor") << limiter.name;
    EXPECT_TRUE(limiter.valid) << limiter.name;
  };
  expect_window(0, 60, 1min);
  expect_window(1, 1000, 24h);
  expect_window(2, 100, 1h);
  expect_window(3, 5, 1s);
  expect_window(4, 500, 1h);
  EXPECT_EQ(read_edge.limiters[3].name, "rls:edge.path_/upload");
  EXPECT_TRUE(read_edge.limiters[3].shadow);
  EXPECT_FALSE(read_edge.limiters[0].shadow);
  EXPECT_EQ(read_edge.limiters[0].at, (Location{5, 5}));
}

TEST(EnvoyRatelimit, UnitsAreThatProjectsFixedLengths) {
  EXPECT_EQ(envoy_unit_length("second"), std::optional<limiter::Duration>(1s));
  EXPECT_EQ(envoy_unit_length("MINUTE"), std::optional<limiter::Duration>(60s));
  EXPECT_EQ(envoy_unit_length("Hour"), std::optional<limiter::Duration>(3600s));
  EXPECT_EQ(envoy_unit_length("day"), std::optional<limiter::Duration>(86'400s));
  EXPECT_EQ(envoy_unit_length("week"), std::optional<limiter::Duration>(604'800s));
  EXPECT_EQ(envoy_unit_length("month"), std::optional<limiter::Duration>(2'592'000s));
  EXPECT_EQ(envoy_unit_length("year"), std::optional<limiter::Duration>(31'536'000s));
  EXPECT_EQ(envoy_unit_length("unknown"), std::nullopt);
  EXPECT_EQ(envoy_unit_length("seconds"), std::nullopt);
}

TEST(EnvoyRatelimit, OtherAlgorithmsTakeTheSameLimit) {
  constexpr std::string_view kOne = R"(domain: d
descriptors:
  - {key: k, rate_limit: {unit: minute, requests_per_unit: 30}}
)";
  const EnvoyRead sliding = read_envoy(kOne, AlgorithmKind::sliding_window);
  ASSERT_EQ(sliding.limiters.size(), 1u);
  EXPECT_EQ(sliding.limiters[0].options.algorithm, AlgorithmKind::sliding_window);
  EXPECT_EQ(sliding.limiters[0].options.limit, 30u);
  EXPECT_EQ(sliding.limiters[0].options.window, 1min);

  const EnvoyRead leaky = read_envoy(kOne, AlgorithmKind::leaky_bucket);
  ASSERT_EQ(leaky.limiters.size(), 1u);
  EXPECT_EQ(leaky.limiters[0].options.algorithm, AlgorithmKind::leaky_bucket);
  EXPECT_EQ(leaky.limiters[0].options.rate, (limiter::Rate{.permits = 30, .period = 1min}));
  EXPECT_EQ(leaky.limiters[0].options.burst, 30.0);
  EXPECT_EQ(leaky.limiters[0].options.limit, 0u);
}

TEST(EnvoyRatelimit, AnUnknownKeyIsAnErrorAtItsLineAndColumn) {
  const EnvoyRead broken = read_envoy(envoy_fixture("broken.yaml"));
  EXPECT_FALSE(broken.domain);
  EXPECT_TRUE(broken.limiters.empty());
  EXPECT_THAT(broken.errors,
              ElementsAre("ratelimit.yaml:5:13: descriptors[0].rate_limit.unit: \"fortnight\" is "
                          "not one of second, minute, hour, day, week, month or year",
                          "ratelimit.yaml:7:7: descriptors[0].rate_limit: unknown key \"burst\"; "
                          "accepted keys: unit, requests_per_unit, unlimited, name or replaces"));
}

TEST(EnvoyRatelimit, ProblemsAsThatProjectFindsThemAndMore) {
  const EnvoyRead broken = read_envoy(R"(domain: d
descriptors:
  - key: a
    rate_limit: {unlimited: true, unit: second}
  - key: a
  - key: b
    value: x*
  - key: c
    rate_limit: {name: n, unit: second, requests_per_unit: 0, replaces: [{name: n}, {}]}
  - key: e
    quota_mode: true
    share_threshold: true
    shadow_mode: yes
    rate_limit: {requests_per_unit: 1}
  - value: v
  - key: f
    descriptors: {key: g}
  - key: h
    rate_limit: {unit: second}
  - {key: "", rate_limit: {unit: second, requests_per_unit: 1}}
)");
  EXPECT_FALSE(broken.domain);
  EXPECT_TRUE(broken.limiters.empty());
  EXPECT_THAT(
      broken.errors,
      ElementsAre(
          "ratelimit.yaml:4:41: descriptors[0].rate_limit.unit: not with unlimited: true (an "
          "unlimited descriptor has no unit)",
          "ratelimit.yaml:5:10: descriptors[1].key: duplicate descriptor composite key \"d.a\"",
          "ratelimit.yaml:7:12: descriptors[2].value: wildcards (*) are not read: sluice matches "
          "keys and values exactly",
          "ratelimit.yaml:9:60: descriptors[3].rate_limit.requests_per_unit: \"0\" is not a "
          "whole number from 1 to 4294967295",
          "ratelimit.yaml:9:81: descriptors[3].rate_limit.replaces[0].name: a limit cannot "
          "replace itself",
          "ratelimit.yaml:9:85: descriptors[3].rate_limit.replaces[1]: an empty entry; give the "
          "name of the limit it replaces",
          "ratelimit.yaml:11:17: descriptors[4].quota_mode: not supported: sluice enforces a "
          "limit or shadows it",
          "ratelimit.yaml:12:22: descriptors[4].share_threshold: applies to wildcard values, "
          "which sluice does not read",
          "ratelimit.yaml:13:18: descriptors[4].shadow_mode: \"yes\" is not one of true or false",
          "ratelimit.yaml:14:17: descriptors[4].rate_limit.unit: missing",
          "ratelimit.yaml:15:5: descriptors[5].key: missing",
          "ratelimit.yaml:17:18: descriptors[6].descriptors: expected a list of descriptors",
          "ratelimit.yaml:19:17: descriptors[7].rate_limit.requests_per_unit: missing",
          "ratelimit.yaml:20:11: descriptors[8].key: empty"));
}

TEST(EnvoyRatelimit, AFileWithoutADomainOrNotYamlIsAnError) {
  EXPECT_THAT(read_envoy("").errors,
              ElementsAre("ratelimit.yaml:1:1: the file is empty; it needs a domain and "
                          "descriptors"));
  EXPECT_THAT(read_envoy("descriptors: []\nlimits: 1\n").errors,
              ElementsAre("ratelimit.yaml:1:1: domain: missing",
                          "ratelimit.yaml:2:1: unknown key \"limits\"; accepted keys: domain or "
                          "descriptors"));
  EXPECT_THAT(read_envoy("domain: [a\n").errors.size(), 1u);
}

TEST(EnvoyRatelimit, ALimiterNameTakenIsAnError) {
  LimiterConfig written;
  written.name = "rls:d.k";
  const EnvoyRead taken = read_envoy(
      "domain: d\ndescriptors:\n  - {key: k, rate_limit: {unit: second, "
      "requests_per_unit: 1}}\n",
      AlgorithmKind::fixed_window, {written});
  EXPECT_THAT(taken.errors, ElementsAre("ratelimit.yaml:3:11: descriptors[0].key: its limiter's "
                                        "name \"rls:d.k\" is taken"));
  EXPECT_EQ(taken.limiters.size(), 1u);
}

TEST(EnvoyRatelimit, ValuesAreReadUnchanged) {
  const EnvoyRead read_values = read_envoy(R"(domain: d
descriptors:
  - {key: k, value: "${HOME}", rate_limit: {unit: second, requests_per_unit: 1}}
)");
  ASSERT_THAT(read_values.errors, ElementsAre());
  EXPECT_THAT(read_values.domain->rules[0].entries, ElementsAre(RlsEntry{"k", "${HOME}"}));
  EXPECT_EQ(read_values.limiters[0].name, "rls:d.k_${HOME}");
}

}  // namespace
}  // namespace sluice::config
