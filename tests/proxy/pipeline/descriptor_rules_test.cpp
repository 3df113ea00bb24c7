#include "proxy/pipeline/descriptor_rules.hpp"

#include <gtest/gtest.h>

#include <array>

#include "config/load_config.hpp"

namespace sluice::pipeline {
namespace {

std::optional<std::string> no_descriptor_variables(std::string_view) { return std::nullopt; }

config::ProxyConfig rules_config() {
  return config::parse_config(R"(
upstream: "http://127.0.0.1:9000"
limiters:
  a: {algorithm: fixed_window, limit: 10, window: 1m}
  b: {algorithm: fixed_window, limit: 10, window: 1m}
  c: {algorithm: fixed_window, limit: 10, window: 1m}
  d: {algorithm: fixed_window, limit: 10, window: 1m}
routes:
  - {match: {path_prefix: /}}
rls:
  - domain: edge
    descriptors:
      - {entries: [tenant, user], limiter: a}
      - {entries: [tenant=acme, user], limiter: b}
      - {entries: [tenant, user=root], limiter: c}
      - {entries: [tenant=acme, user=root], unlimited: true}
      - {key: remote_address, limiter: d}
  - domain: other
    descriptors:
      - {key: remote_address, limiter: a}
)",
                              "proxy.yaml", no_descriptor_variables);
}

std::string limiter_of(const DescriptorRules& rules, const config::ProxyConfig& config,
                       std::string_view domain, std::span<const DescriptorEntry> entries) {
  const config::RlsRule* rule = rules.match(*rules.domain(domain), entries);
  if (rule == nullptr) {
    return "no rule";
  }
  const std::size_t index = rules.limiter_index(*rule);
  return index == DescriptorRules::npos ? "unlimited" : config.limiters[index].name;
}

TEST(DescriptorRules, TheMostSpecificMatchWinsEntryByEntryFromTheFirst) {
  const config::ProxyConfig config = rules_config();
  const DescriptorRules rules(config);
  using E = DescriptorEntry;
  EXPECT_EQ(limiter_of(rules, config, "edge", std::array{E{"tenant", "x"}, E{"user", "y"}}), "a");
  EXPECT_EQ(limiter_of(rules, config, "edge", std::array{E{"tenant", "acme"}, E{"user", "y"}}),
            "b");
  EXPECT_EQ(limiter_of(rules, config, "edge", std::array{E{"tenant", "x"}, E{"user", "root"}}),
            "c");
  // tenant=acme beats tenant=any at the first entry, whatever follows.
  EXPECT_EQ(limiter_of(rules, config, "edge", std::array{E{"tenant", "acme"}, E{"user", "root"}}),
            "unlimited");
  EXPECT_EQ(limiter_of(rules, config, "edge", std::array{E{"remote_address", "10.0.0.1"}}), "d");
  EXPECT_EQ(limiter_of(rules, config, "other", std::array{E{"remote_address", "10.0.0.1"}}), "a");
}

TEST(DescriptorRules, ADescriptorNeedsExactlyTheRulesKeysInOrder) {
  const config::ProxyConfig config = rules_config();
  const DescriptorRules rules(config);
  using E = DescriptorEntry;
  EXPECT_EQ(limiter_of(rules, config, "edge", std::array{E{"user", "y"}, E{"tenant", "x"}}),
            "no rule");
  EXPECT_EQ(limiter_of(rules, config, "edge", std::array{E{"tenant", "x"}}), "no rule");
  EXPECT_EQ(limiter_of(rules, config, "edge",
                       std::array{E{"tenant", "x"}, E{"user", "y"}, E{"extra", "z"}}),
            "no rule");
  EXPECT_EQ(limiter_of(rules, config, "edge", std::span<const E>()), "no rule");
  EXPECT_EQ(limiter_of(rules, config, "edge", std::array{E{"Tenant", "x"}, E{"user", "y"}}),
            "no rule");  // keys are case-sensitive, as envoyproxy/ratelimit's
}

TEST(DescriptorRules, AnUnknownDomainHasNoIndex) {
  const config::ProxyConfig config = rules_config();
  const DescriptorRules rules(config);
  EXPECT_EQ(rules.domain_count(), 2u);
  EXPECT_EQ(rules.domain("edge"), std::optional<std::size_t>(0));
  EXPECT_EQ(rules.domain("other"), std::optional<std::size_t>(1));
  EXPECT_EQ(rules.domain("elsewhere"), std::nullopt);
  EXPECT_EQ(rules.domain(""), std::nullopt);
  EXPECT_EQ(rules.match(2, {}), nullptr);
  const config::RlsRule foreign = config.rls[0].rules[0];  // a copy: not one of the rules'
  EXPECT_EQ(rules.limiter_index(foreign), DescriptorRules::npos);
}

TEST(DescriptorRules, TheFirstWrittenWinsBetweenEquallySpecificRules) {
  const config::ProxyConfig config = config::parse_config(R"(
upstream: "http://127.0.0.1:9000"
limiters:
  a: {algorithm: fixed_window, limit: 10, window: 1m}
  b: {algorithm: fixed_window, limit: 10, window: 1m}
routes:
  - {match: {path_prefix: /}}
rls:
  - domain: edge
    descriptors:
      - {entries: [tenant=acme, user], limiter: a}
      - {entries: [tenant, user=root], limiter: b}
      - {entries: [tenant=x, user], limiter: b}
      - {entries: [tenant=x, user=root], limiter: a}
)",
                                                          "proxy.yaml", no_descriptor_variables);
  const DescriptorRules rules(config);
  using E = DescriptorEntry;
  // (acme, any) and (any, root) both match; a value at the first entry decides.
  EXPECT_EQ(limiter_of(rules, config, "edge", std::array{E{"tenant", "acme"}, E{"user", "root"}}),
            "a");
  // A later, more specific rule beats an earlier one.
  EXPECT_EQ(limiter_of(rules, config, "edge", std::array{E{"tenant", "x"}, E{"user", "root"}}),
            "a");
  EXPECT_EQ(limiter_of(rules, config, "edge", std::array{E{"tenant", "x"}, E{"user", "bob"}}), "b");
}

TEST(DescriptorRules, AReplacedRuleIsDroppedWhenItsReplacerMatchedToo) {
  const std::string file = SLUICE_SOURCE_DIR "/tests/data/envoy_ratelimit/edge.yaml";
  const config::ProxyConfig config = config::parse_config(
      "upstream: \"http://127.0.0.1:9000\"\nroutes: [{match: {path_prefix: /}}]\nrls:\n"
      "  - envoy_config: \"" +
          file + "\"\n",
      "proxy.yaml", no_descriptor_variables);
  const DescriptorRules rules(config);
  const std::size_t edge = *rules.domain("edge");
  using E = DescriptorEntry;
  const config::RlsRule* per_user =
      rules.match(edge, std::array{E{"plan", "free"}, E{"user", "bob"}});
  const config::RlsRule* tenant =
      rules.match(edge, std::array{E{"tenant", "acme"}, E{"user", "bob"}});
  const config::RlsRule* address = rules.match(edge, std::array{E{"remote_address", "10.0.0.1"}});
  ASSERT_NE(per_user, nullptr);
  ASSERT_NE(tenant, nullptr);
  ASSERT_NE(address, nullptr);
  EXPECT_EQ(config.limiters[rules.limiter_index(*per_user)].name, "rls:edge.plan_free.user");

  std::array<const config::RlsRule*, 4> matched{per_user, nullptr, tenant, address};
  drop_replaced(matched);
  EXPECT_EQ(matched[0], nullptr);  // per_user, replaced by the tenant's rule
  EXPECT_EQ(matched[1], nullptr);
  EXPECT_EQ(matched[2], tenant);
  EXPECT_EQ(matched[3], address);

  std::array<const config::RlsRule*, 2> alone{per_user, address};
  drop_replaced(alone);
  EXPECT_EQ(alone[0], per_user);  // nothing that replaces it matched
  EXPECT_EQ(alone[1], address);
}

TEST(DescriptorRules, AReplacedRulesOwnReplacesStillCount) {
  config::RlsRule first{.entries = {}, .limiter = "a", .name = "x", .replaces = {"y"}, .at = {}};
  config::RlsRule second{.entries = {}, .limiter = "b", .name = "y", .replaces = {"x"}, .at = {}};
  std::array<const config::RlsRule*, 2> both{&first, &second};
  drop_replaced(both);
  EXPECT_EQ(both[0], nullptr);
  EXPECT_EQ(both[1], nullptr);

  std::vector<const config::RlsRule*> many(100, &first);
  many[99] = &second;
  drop_replaced(many);
  EXPECT_EQ(std::count(many.begin(), many.end(), nullptr), 100);
}

TEST(DescriptorKey, JoinsTheValuesWithPlusIntoTheCallersString) {
  std::string key = "left over from before";
  using E = DescriptorEntry;
  descriptor_key(std::array{E{"tenant", "acme"}, E{"user", "bob"}}, key);
  EXPECT_EQ(key,
            "acme\x1f"
            "bob");
  descriptor_key(std::array{E{"remote_address", "10.0.0.1"}}, key);
  EXPECT_EQ(key, "10.0.0.1");
  descriptor_key(std::array{E{"a", ""}, E{"b", ""}}, key);
  EXPECT_EQ(key, "\x1f");
  descriptor_key({}, key);
  EXPECT_EQ(key, "");
}

}  // namespace
}  // namespace sluice::pipeline
