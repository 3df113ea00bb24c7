#include "config/load_config.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <map>

#include "tests/config/broken_configs.hpp"

namespace sluice::config {
namespace {

using namespace std::chrono_literals;
using ::testing::ElementsAreArray;

/// A fixed environment, so that tests do not depend on the machine's.
std::optional<std::string> test_environment(std::string_view name) {
  static const std::map<std::string, std::string, std::less<>> variables{
      {"SLUICE_TEST_RATE", "25/s"},
      {"SLUICE_TEST_EMPTY", ""},
      {"SLUICE_TEST_SECRET", "0123456789abcdef0123456789abcdef"}};
  const auto found = variables.find(name);
  return found == variables.end() ? std::nullopt : std::optional(found->second);
}

std::vector<std::string> errors_of(const std::string& yaml) {
  try {
    parse_config(yaml, "proxy.yaml", test_environment);
  } catch (const ConfigError& error) {
    return error.lines();
  }
  return {};
}

class BrokenConfigTest : public ::testing::TestWithParam<test::BrokenConfig> {};

TEST_P(BrokenConfigTest, ReportsEveryProblemAsFileLineColumn) {
  const test::BrokenConfig& broken = GetParam();
  const std::vector<std::string> actual = errors_of(broken.yaml);
  EXPECT_THAT(actual, ElementsAreArray(broken.errors)) << [&] {
    std::string listing = "actual:\n";
    for (const std::string& line : actual) {
      listing += "  \"" + line + "\",\n";
    }
    return listing;
  }();
}

INSTANTIATE_TEST_SUITE_P(Table, BrokenConfigTest, ::testing::ValuesIn(test::broken_configs()),
                         [](const auto& test_case) { return std::string(test_case.param.name); });

// SPEC §2's example, as written there.
constexpr const char* kSpecExample = R"(
listen: "0.0.0.0:8080"
admin: "127.0.0.1:9901"
threads: 0
upstream: "http://127.0.0.1:9000"
trusted_proxies: ["10.0.0.0/8"]
timeouts: {header: 10s, idle: 60s, connect: 2s, upstream: 30s, drain: 10s}
limits_headers: both
log: {level: info, format: text, access: true}
store:
  type: memory
  max_keys: 1000000
  redis:
    url: "redis://127.0.0.1:6379/0"
    prefix: "sluice:"
    timeout: 20ms
    pool: 4
    on_error: allow
    cluster: false
limiters:
  per-ip:
    algorithm: sliding_window
    limit: 100
    window: 1m
    key: ip
  api-key:
    algorithm: token_bucket
    rate: 10/s
    burst: 20
    key: "header:X-Api-Key"
    mode: delay
    max_delay: 2s
deny: ["203.0.113.0/24"]
ban: {after: 20, within: 1m, for: 10m}
routes:
  - name: login
    match:
      path: /login
      methods: [POST]
      host: api.example.com
      headers:
        - {name: X-Api-Key, present: true}
        - {name: X-Tier, value: gold}
    upstream: "http://127.0.0.1:9001"
    limiters: [per-ip, api-key]
    cost: 1
  - name: status
    match: {path: /status}
    respond: {status: 200, body: "ok\n"}
)";

TEST(LoadConfig, ReadsTheSpecExample) {
  const ProxyConfig config = parse_config(kSpecExample, "proxy.yaml", test_environment);
  ASSERT_EQ(config.listeners.size(), 1U);
  EXPECT_EQ(config.listeners[0].address.host, "0.0.0.0");
  EXPECT_EQ(config.listeners[0].address.port, 8080);
  EXPECT_FALSE(config.listeners[0].tls);
  ASSERT_TRUE(config.admin.has_value());
  EXPECT_EQ(config.admin->port, 9901);
  ASSERT_TRUE(config.upstream.has_value());
  EXPECT_EQ(config.upstream->host, "127.0.0.1");
  EXPECT_EQ(config.upstream->port, 9000);
  ASSERT_EQ(config.trusted_proxies.size(), 1U);
  EXPECT_EQ(to_string(config.trusted_proxies[0]), "10.0.0.0/8");
  EXPECT_EQ(config.timeouts.upstream, 30s);
  EXPECT_EQ(config.store.redis.timeout, 20ms);
  EXPECT_FALSE(config.store.redis.cluster);

  ASSERT_EQ(config.limiters.size(), 2U);
  const LimiterConfig& per_ip = config.limiters[0];
  EXPECT_EQ(per_ip.name, "per-ip");
  EXPECT_EQ(per_ip.options.algorithm, limiter::AlgorithmKind::sliding_window);
  EXPECT_EQ(per_ip.options.limit, 100U);
  EXPECT_EQ(per_ip.options.window, 1min);
  EXPECT_EQ(per_ip.options.max_keys, 1'000'000U);
  ASSERT_EQ(per_ip.key.parts.size(), 1U);
  EXPECT_EQ(per_ip.key.parts[0].kind, KeyPart::Kind::ip);
  const LimiterConfig& api_key = config.limiters[1];
  EXPECT_EQ(api_key.options.rate.permits, 10);
  EXPECT_EQ(api_key.options.rate.period, 1s);
  EXPECT_EQ(api_key.options.burst, 20);
  EXPECT_EQ(api_key.options.policy.mode, limiter::Mode::delay);
  EXPECT_EQ(api_key.options.policy.max_delay, 2s);
  EXPECT_EQ(api_key.key.parts[0].kind, KeyPart::Kind::header);
  EXPECT_EQ(api_key.key.parts[0].name, "X-Api-Key");
  EXPECT_TRUE(api_key.key.parts[0].secret());

  ASSERT_EQ(config.deny.size(), 1U);
  ASSERT_TRUE(config.ban.has_value());
  EXPECT_EQ(config.ban->after, 20U);
  EXPECT_EQ(config.ban->within, 1min);
  EXPECT_EQ(config.ban->duration, 10min);

  ASSERT_EQ(config.routes.size(), 2U);
  const Route& login = config.routes[0];
  EXPECT_EQ(login.match.path_kind, RouteMatch::Path::exact);
  EXPECT_EQ(login.match.path, "/login");
  EXPECT_THAT(login.match.methods, ElementsAreArray({"POST"}));
  EXPECT_EQ(login.match.host, "api.example.com");
  ASSERT_EQ(login.match.headers.size(), 2U);
  EXPECT_FALSE(login.match.headers[0].value.has_value());
  EXPECT_EQ(login.match.headers[1].value, "gold");
  EXPECT_EQ(login.upstream->port, 9001);
  EXPECT_THAT(login.limiters, ElementsAreArray({"per-ip", "api-key"}));
  const Route& status = config.routes[1];
  ASSERT_TRUE(status.respond.has_value());
  EXPECT_EQ(status.respond->status, 200U);
  EXPECT_EQ(status.respond->body, "ok\n");
}

// SPEC §8's example, as written there (the key set by URL; tiers are read by a later step).
constexpr const char* kIdentityExample = R"(
upstream: "http://127.0.0.1:9000"
auth:
  jwt:
    main:
      issuer: "https://idp.example.com/"
      audiences: ["api"]
      jwks: {url: "https://idp.example.com/.well-known/jwks.json", refresh: 10m}
      algorithms: [RS256, ES256]
      from: [bearer, "cookie:session"]
      leeway: 60s
      claims_to_headers: {sub: X-User-Id}
    local:
      issuer: me
      keys: [{file: /etc/sluice/idp.pem, alg: ES256}, {secret: "${SLUICE_TEST_SECRET}", alg: HS256}]
routes:
  - name: api
    match: {path_prefix: /api/}
    auth: {jwt: main, required: true}
    limiters: [per-user, per-tenant]
  - name: open
    auth: {jwt: local, required: false}
limiters:
  per-user: {algorithm: token_bucket, rate: 10/s, burst: 20, key: "jwt:sub"}
  per-tenant: {algorithm: sliding_window, limit: 1000, window: 1m, key: "jwt:org.id+jwt:sub"}
)";

TEST(LoadConfig, ReadsJwtProvidersAndRoutesThatVerify) {
  const ProxyConfig config = parse_config(kIdentityExample, "proxy.yaml", test_environment);
  ASSERT_EQ(config.jwt_providers.size(), 2U);
  const JwtProviderConfig& main = config.jwt_providers[0];
  EXPECT_EQ(main.name, "main");
  EXPECT_EQ(main.issuer, "https://idp.example.com/");
  EXPECT_EQ(main.audiences, std::vector<std::string>{"api"});
  EXPECT_EQ(main.jwks_url, "https://idp.example.com/.well-known/jwks.json");
  EXPECT_EQ(main.jwks_refresh, 10min);
  EXPECT_EQ(main.algorithms, (std::vector<std::string>{"RS256", "ES256"}));
  ASSERT_EQ(main.from.size(), 2U);
  EXPECT_EQ(main.from[0].kind, KeyPart::Kind::bearer);
  EXPECT_EQ(main.from[1].kind, KeyPart::Kind::cookie);
  EXPECT_EQ(main.from[1].name, "session");
  EXPECT_EQ(main.leeway, 60s);
  ASSERT_EQ(main.claims_to_headers.size(), 1U);
  EXPECT_EQ(main.claims_to_headers[0], (std::pair<std::string, std::string>{"sub", "X-User-Id"}));

  const JwtProviderConfig& local = config.jwt_providers[1];
  ASSERT_EQ(local.keys.size(), 2U);
  EXPECT_EQ(local.keys[0].file, "/etc/sluice/idp.pem");
  EXPECT_EQ(local.keys[1].secret, "0123456789abcdef0123456789abcdef");
  // Keys named one by one bring their algorithms; the default source is the bearer token.
  EXPECT_EQ(local.algorithms, (std::vector<std::string>{"ES256", "HS256"}));
  ASSERT_EQ(local.from.size(), 1U);
  EXPECT_EQ(local.from[0].kind, KeyPart::Kind::bearer);

  ASSERT_TRUE(config.routes[0].auth.has_value());
  EXPECT_EQ(config.routes[0].auth->provider, "main");
  EXPECT_TRUE(config.routes[0].auth->required);
  EXPECT_FALSE(config.routes[1].auth->required);
  const KeySpec& tenant = config.limiter_named("per-tenant")->key;
  ASSERT_EQ(tenant.parts.size(), 2U);
  EXPECT_EQ(tenant.parts[0].kind, KeyPart::Kind::jwt);
  EXPECT_EQ(tenant.parts[0].name, "org.id");
  EXPECT_FALSE(tenant.parts[0].secret());  // claims are shown as they are (SPEC §10)
  EXPECT_TRUE(tenant.reads_claims());
}

TEST(LoadConfig, ReadsChargesAfterTheResponse) {
  const ProxyConfig config = parse_config(R"(
upstream: "http://127.0.0.1:9000"
limiters:
  tokens-per-user: {algorithm: token_bucket, rate: 100000/m, burst: 100000, key: "header:X-User", cost: response}
  failed-logins: {algorithm: sliding_log, limit: 5, window: 15m, count_if: {status: [401, 403]}}
routes:
  - {name: chat, match: {path: /chat}, limiters: [tokens-per-user], cost_from: {usage: openai, count: input, estimate: 500, include_usage: true}}
  - {name: messages, match: {path: /messages}, limiters: [tokens-per-user], cost_from: {usage: anthropic}}
  - {name: metered, match: {path: /metered}, limiters: [tokens-per-user], cost_from: {header: X-Tokens-Used}}
  - {name: json, match: {path: /json}, limiters: [tokens-per-user], cost_from: {json: usage.total_tokens}}
  - {name: downloads, match: {path: /downloads}, limiters: [tokens-per-user], cost_from: {bytes: response}}
  - {name: login, match: {path: /login}, limiters: [failed-logins]}
)",
                                          "proxy.yaml", test_environment);
  const LimiterConfig& tokens = *config.limiter_named("tokens-per-user");
  EXPECT_TRUE(tokens.cost_from_response);
  EXPECT_TRUE(tokens.settled_later());
  const LimiterConfig& logins = *config.limiter_named("failed-logins");
  EXPECT_FALSE(logins.cost_from_response);
  EXPECT_EQ(logins.count_if_status, (std::vector<unsigned>{401, 403}));
  EXPECT_TRUE(logins.settled_later());

  ASSERT_EQ(config.routes.size(), 6U);
  const CostFrom& chat = *config.routes[0].cost_from;
  EXPECT_EQ(chat.source, CostFrom::Source::usage);
  EXPECT_EQ(chat.usage, CostFrom::Usage::openai);
  EXPECT_EQ(chat.count, CostFrom::Count::input);
  EXPECT_EQ(chat.estimate, 500U);
  EXPECT_TRUE(chat.include_usage);
  const CostFrom& messages = *config.routes[1].cost_from;
  EXPECT_EQ(messages.usage, CostFrom::Usage::anthropic);
  EXPECT_EQ(messages.count, CostFrom::Count::total);
  EXPECT_EQ(messages.estimate, 0U);
  EXPECT_FALSE(messages.include_usage);
  EXPECT_EQ(config.routes[2].cost_from->source, CostFrom::Source::header);
  EXPECT_EQ(config.routes[2].cost_from->field, "X-Tokens-Used");
  EXPECT_EQ(config.routes[3].cost_from->source, CostFrom::Source::json);
  EXPECT_EQ(config.routes[3].cost_from->field, "usage.total_tokens");
  EXPECT_EQ(config.routes[4].cost_from->source, CostFrom::Source::bytes);
  EXPECT_FALSE(config.routes[5].cost_from.has_value());
}

TEST(LoadConfig, ReadsTheDecisionServicesListener) {
  // A decision service needs no upstream: its checks forward nothing.
  const ProxyConfig plain = parse_config("decide: \"127.0.0.1:8081\"\nroutes: [{name: all}]\n",
                                         "proxy.yaml", test_environment);
  ASSERT_TRUE(plain.decide.has_value());
  EXPECT_EQ(plain.decide->address, (HostPort{"127.0.0.1", 8081}));
  EXPECT_FALSE(plain.decide->tls.has_value());
  EXPECT_FALSE(plain.upstream.has_value());
  const ProxyConfig tls = parse_config(
      "decide: {address: \"0.0.0.0:8443\", tls: {cert: c.pem, key: k.pem}}\n"
      "upstream: http://127.0.0.1:9000\nroutes: [{name: all}]\n",
      "proxy.yaml", test_environment);
  EXPECT_EQ(tls.decide->tls->cert, "c.pem");
  const ProxyConfig off =
      parse_config("decide: \"\"\nupstream: http://127.0.0.1:9000\nroutes: [{name: all}]\n",
                   "proxy.yaml", test_environment);
  EXPECT_FALSE(off.decide.has_value());
  EXPECT_FALSE(parse_config("upstream: http://127.0.0.1:9000\nroutes: [{name: all}]\n",
                            "proxy.yaml", test_environment)
                   .decide.has_value());
}

TEST(LoadConfig, RefusesADecisionServiceOnAProxyAddress) {
  try {
    parse_config("listen: \"127.0.0.1:8080\"\ndecide: \"127.0.0.1:8080\"\nroutes: [{name: all}]\n",
                 "proxy.yaml", test_environment);
    ADD_FAILURE() << "accepted";
  } catch (const ConfigError& error) {
    EXPECT_THAT(error.lines(),
                ElementsAreArray({"proxy.yaml:2:9: decide: the same address as a listen address: "
                                  "give the decision service its own port"}));
  }
}

TEST(LoadConfig, FillsInTheDefaults) {
  const ProxyConfig config = parse_config(
      "upstream: http://127.0.0.1:9000\n"
      "limiters:\n"
      "  bucket: {algorithm: token_bucket, rate: 30/m}\n"
      "  leaky: {algorithm: leaky_bucket, rate: 5/200ms}\n"
      "routes: [{limiters: [bucket, leaky]}]\n",
      "proxy.yaml", test_environment);
  EXPECT_EQ(config.listeners.at(0).address.port, 8080);
  EXPECT_EQ(config.admin->port, 9901);
  EXPECT_EQ(config.limits_headers, LimitsHeaders::both);
  EXPECT_EQ(config.timeouts.header, 10s);
  EXPECT_EQ(config.limiters[0].key.text, "ip");
  EXPECT_EQ(config.limiters[0].status, 429U);
  EXPECT_FALSE(config.limiters[0].options.burst.has_value());  // one second of rate, at least 1
  EXPECT_EQ(config.limiters[0].options.policy.max_delay, 1s);
  EXPECT_EQ(config.limiters[1].options.rate.period, 200ms);
  EXPECT_EQ(config.routes[0].name, "route-1");
  EXPECT_EQ(config.routes[0].match.path_kind, RouteMatch::Path::any);
  EXPECT_EQ(config.routes[0].cost, 1U);
  EXPECT_FALSE(config.watch);
}

TEST(LoadConfig, ReadsWatch) {
  EXPECT_TRUE(parse_config("upstream: http://127.0.0.1:9000\nwatch: true\nroutes: [{name: a}]\n",
                           "proxy.yaml", test_environment)
                  .watch);
}

TEST(LoadConfig, ExpandsEnvironmentVariablesInValues) {
  const ProxyConfig config = parse_config(
      "upstream: \"http://${SLUICE_TEST_HOST:-127.0.0.1}:9000\"\n"
      "admin: \"${SLUICE_TEST_EMPTY}\"\n"
      "limiters:\n"
      "  bucket: {algorithm: token_bucket, rate: \"${SLUICE_TEST_RATE}\"}\n"
      "routes: [{limiters: [bucket], match: {path: \"/price$$\"}}]\n",
      "proxy.yaml", test_environment);
  EXPECT_EQ(config.upstream->host, "127.0.0.1");
  EXPECT_FALSE(config.admin.has_value());  // "" disables the admin port
  EXPECT_EQ(config.limiters[0].options.rate.permits, 25);
  EXPECT_EQ(config.routes[0].match.path, "/price$");
}

TEST(LoadConfig, OverridesStartFromTheLimitersParameters) {
  const ProxyConfig config = parse_config(
      "upstream: http://127.0.0.1:9000\n"
      "limiters:\n"
      "  per-key:\n"
      "    algorithm: sliding_window\n"
      "    limit: 100\n"
      "    window: 1m\n"
      "    key: bearer\n"
      "    overrides: {\"premium-key\": {limit: 1000}, \"slow\": {window: 1h}}\n"
      "routes: [{limiters: [per-key]}]\n",
      "proxy.yaml", test_environment);
  const std::vector<Override>& overrides = config.limiters[0].overrides;
  ASSERT_EQ(overrides.size(), 2U);
  EXPECT_EQ(overrides[0].value, "premium-key");
  EXPECT_EQ(overrides[0].options.limit, 1000U);
  EXPECT_EQ(overrides[0].options.window, 1min);
  EXPECT_EQ(overrides[1].options.limit, 100U);
  EXPECT_EQ(overrides[1].options.window, 1h);
}

TEST(LoadConfig, ReadsCompositeKeys) {
  const ProxyConfig config = parse_config(
      "upstream: http://127.0.0.1:9000\n"
      "limiters:\n"
      "  k: {algorithm: fixed_window, limit: 5, window: 1s, key: \"ip+header:X-User+query:page\","
      " ipv6_prefix: 64}\n"
      "routes: [{limiters: [k]}]\n",
      "proxy.yaml", test_environment);
  const KeySpec& key = config.limiters[0].key;
  ASSERT_EQ(key.parts.size(), 3U);
  EXPECT_EQ(key.parts[0].kind, KeyPart::Kind::ip);
  EXPECT_EQ(key.parts[1].kind, KeyPart::Kind::header);
  EXPECT_EQ(key.parts[1].name, "X-User");
  EXPECT_EQ(key.parts[2].kind, KeyPart::Kind::query);
  EXPECT_EQ(config.limiters[0].ipv6_prefix, 64U);
}

TEST(LoadConfig, ReadsAListOfCleartextAndTlsListeners) {
  const ProxyConfig config = parse_config(
      "listen:\n"
      "  - \"127.0.0.1:8080\"\n"
      "  - address: \"[::]:8443\"\n"
      "    tls: {cert: /etc/sluice/tls.crt, key: /etc/sluice/tls.key, min_version: \"1.3\",\n"
      "          client_ca: /etc/sluice/ca.pem, client_cert: optional}\n"
      "  - {address: \":9443\", tls: {cert: /c.pem, key: /k.pem, client_ca: /ca.pem,\n"
      "                                ocsp_fetch: false}}\n"
      "upstream: https://api.internal\n"
      "upstream_tls: {ca: /ca.pem, server_name: api.example, cert: /u.pem, key: /u.key}\n"
      "limiters:\n"
      "  k: {algorithm: fixed_window, limit: 5, window: 1s, key: \"cert:subject+cert:san\"}\n"
      "routes: [{limiters: [k]}]\n",
      "proxy.yaml", test_environment);
  ASSERT_EQ(config.listeners.size(), 3U);
  EXPECT_EQ(config.listeners[0].address, (HostPort{"127.0.0.1", 8080}));
  EXPECT_FALSE(config.listeners[0].tls);
  ASSERT_TRUE(config.listeners[1].tls);
  const ListenerTls& tls = *config.listeners[1].tls;
  EXPECT_EQ(config.listeners[1].address, (HostPort{"::", 8443}));
  EXPECT_EQ(tls.cert, "/etc/sluice/tls.crt");
  EXPECT_EQ(tls.key, "/etc/sluice/tls.key");
  EXPECT_EQ(tls.min_version, TlsVersion::v1_3);
  EXPECT_EQ(tls.client_ca, "/etc/sluice/ca.pem");
  EXPECT_EQ(tls.client_cert, ClientCertificates::optional);
  EXPECT_EQ(tls.path, "listen[1].tls");
  EXPECT_TRUE(tls.ocsp_fetch) << "stapling from the certificate's responder is on by default";
  ASSERT_TRUE(config.listeners[2].tls);
  EXPECT_FALSE(config.listeners[2].tls->ocsp_fetch);
  EXPECT_EQ(config.listeners[2].tls->min_version, TlsVersion::v1_2);
  EXPECT_EQ(config.listeners[2].tls->client_cert, ClientCertificates::require)
      << "client_ca alone asks for a certificate and requires it";
  ASSERT_TRUE(config.upstream.has_value());
  EXPECT_TRUE(config.upstream->tls);
  EXPECT_EQ(config.upstream->port, 443);
  EXPECT_EQ(config.upstream_tls.ca, "/ca.pem");
  EXPECT_TRUE(config.upstream_tls.verify);
  EXPECT_EQ(config.upstream_tls.server_name, "api.example");
  EXPECT_EQ(config.upstream_tls.cert, "/u.pem");
  const KeySpec& key = config.limiters[0].key;
  ASSERT_EQ(key.parts.size(), 2U);
  EXPECT_EQ(key.parts[0].kind, KeyPart::Kind::cert_subject);
  EXPECT_EQ(key.parts[1].kind, KeyPart::Kind::cert_san);
}

TEST(LoadConfig, ReadsASingleTlsListen) {
  const ProxyConfig config = parse_config(
      "listen: \"0.0.0.0:8443\"\ntls: {cert: /c.pem, key: /k.pem}\n"
      "upstream: http://127.0.0.1:9000\nroutes: [{name: a}]\n",
      "proxy.yaml", test_environment);
  ASSERT_EQ(config.listeners.size(), 1U);
  ASSERT_TRUE(config.listeners[0].tls);
  EXPECT_EQ(config.listeners[0].tls->path, "tls");
  EXPECT_EQ(config.listeners[0].tls->client_cert, ClientCertificates::none);
}

TEST(LoadConfig, TheShippedProxyYamlIsValid) {
  const ProxyConfig config = load_config(SLUICE_SOURCE_DIR "/proxy.yaml", test_environment);
  EXPECT_FALSE(config.routes.empty());
}

TEST(LoadConfig, NamesAFileItCannotRead) {
  try {
    load_config("/nonexistent/proxy.yaml", test_environment);
    FAIL() << "expected ConfigError";
  } catch (const ConfigError& error) {
    EXPECT_THAT(error.lines(),
                ElementsAreArray({"/nonexistent/proxy.yaml:0:0: cannot read the file"}));
  }
}

TEST(LoadConfig, SurvivesArbitraryBytes) {
  // Not a crash, whatever the input: every prefix of a real config, and some binary noise.
  const std::string text = kSpecExample;
  for (std::size_t length = 0; length <= text.size(); length += 7) {
    try {
      parse_config(text.substr(0, length), "proxy.yaml", test_environment);
    } catch (const ConfigError&) {
    }
  }
  std::string noise;
  for (int i = 0; i < 4096; ++i) {
    noise += static_cast<char>((i * 131 + 7) % 256);
  }
  EXPECT_THROW(parse_config(noise, "proxy.yaml", test_environment), ConfigError);
}

}  // namespace
}  // namespace sluice::config
