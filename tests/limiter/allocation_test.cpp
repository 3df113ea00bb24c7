// A known key's decision never allocates. This binary counts operator new's calls
// (tests/support/counted_new.cpp), so it is kept apart from the other tests.
#include <gtest/gtest.h>

#include <array>
#include <string>

#include "config/load_config.hpp"
#include "limiter/decide.hpp"
#include "limiter/key_hash.hpp"
#include "limiter/make_limiter.hpp"
#include "proxy/live/top_keys.hpp"
#include "proxy/pipeline/descriptor_rules.hpp"
#include "tests/support/counted_new.hpp"
#include "tests/support/manual_clock.hpp"
#include "tests/support/minted_jwts.hpp"
#include "tests/support/pipeline_fixture.hpp"
#include "tests/support/temp_directory.hpp"

namespace sluice::limiter {
namespace {

using namespace std::chrono_literals;
using test::allocations_during;
using test::at;

/// Where a test's allocation goes, so that the compiler cannot leave it out.
std::string* volatile g_kept = nullptr;

TEST(Allocation, TheCounterSeesAnAllocation) {
  // Every other test expects 0: this one shows the count is real.
  EXPECT_GE(allocations_during([] {
              g_kept = new std::string(64, 'x');
              delete g_kept;
            }),
            1U);
}

TEST(Allocation, AKnownKeysDecisionsNeverAllocate) {
  const Rate rate{.permits = 1000, .period = 1s};
  const std::array<LimiterOptions, 8> all{{
      {.algorithm = AlgorithmKind::fixed_window, .limit = 100, .window = 1s},
      {.algorithm = AlgorithmKind::sliding_window, .limit = 100, .window = 1s},
      {.algorithm = AlgorithmKind::sliding_log, .limit = 100, .window = 1s},
      {.algorithm = AlgorithmKind::wheel, .limit = 100, .window = 1s},
      {.algorithm = AlgorithmKind::token_bucket, .rate = rate},
      {.algorithm = AlgorithmKind::token_bucket, .rate = rate, .warmup = 1s},
      {.algorithm = AlgorithmKind::leaky_bucket, .rate = rate, .burst = 10},
      {.algorithm = AlgorithmKind::concurrency, .limit = 100},
  }};
  const KeyHash key = hash_key("198.51.100.23");
  for (const LimiterOptions& options : all) {
    const auto limiter = make_limiter(options);
    TimePoint now = at(0s);
    const auto run = [&] {
      for (int i = 0; i < 10'000; ++i) {
        now += 3ms;  // crosses windows and refills: every code path of a known key
        limiter->decide(key, now, 1);
        limiter->release(key, 1);
        limiter->decide(key, now, 1);  // concurrency: keep the key tracked
        limiter->peek(key, now);
      }
    };
    run();  // first sight of the key, and the sliding log growing to its limit
    EXPECT_EQ(allocations_during(run), 0U) << name_of(options.algorithm);
  }
}

TEST(Allocation, AllOrNothingDecisionsNeverAllocate) {
  const auto a =
      make_limiter({.algorithm = AlgorithmKind::sliding_window, .limit = 50, .window = 1s});
  const auto b = make_limiter(
      {.algorithm = AlgorithmKind::token_bucket, .rate = {.permits = 20, .period = 1s}});
  const KeyHash key = hash_key("k");
  const std::array<Charge, 2> charges{Charge{a.get(), key, 1}, Charge{b.get(), key, 1}};
  std::array<Outcome, 2> outcomes{};
  decide(charges, at(0s), outcomes);
  EXPECT_EQ(allocations_during([&] {
              for (int i = 0; i < 10'000; ++i) {
                decide(charges, at(std::chrono::milliseconds(i)), outcomes);
              }
            }),
            0U);
}

TEST(Allocation, ThePipelinesDecisionsNeverAllocate) {
  // Trusted proxies and a forwarding chain, a regex route, ip and header keys, two limiters.
  test::PipelineFixture fixture(R"(
upstream: http://127.0.0.1:9000
trusted_proxies: ["10.0.0.0/8"]
deny: ["203.0.113.0/24"]
limiters:
  per-ip: {algorithm: sliding_window, limit: 100000, window: 1m}
  api-key: {algorithm: token_bucket, rate: 1000/s, key: "ip+header:X-Api-Key"}
routes:
  - {name: status, match: {path: /status}, respond: {status: 200}}
  - {name: versioned, match: {path_regex: "^/v[0-9]+/"}, limiters: [per-ip, api-key]}
)");
  const test::PipelineFixture::Request request{
      .target = "/v2/orders?page=3",
      .headers = {{"X-Forwarded-For", "198.51.100.4, 10.1.1.1"}, {"X-Api-Key", "key-123"}},
      .peer = "10.0.0.9"};
  TimePoint now = at(0s);
  const auto run = [&] {
    for (int i = 0; i < 10'000; ++i) {
      now += 1ms;
      const pipeline::Decision decision = fixture.send(request, now);
      ASSERT_EQ(decision.outcome, pipeline::Outcome::allowed);
    }
  };
  run();
  EXPECT_EQ(allocations_during(run), 0U);
}

TEST(Allocation, CountingTheHeaviestKeysNeverAllocates) {
  // A new client address on nearly every request: each one enters the summaries, evicting the
  // least-counted key and copying its text; the header key is found by its hash alone.
  auto config = std::make_shared<const config::ProxyConfig>(config::parse_config(
      R"(
upstream: http://127.0.0.1:9000
trusted_proxies: ["127.0.0.0/8"]
top_keys: 16
limiters:
  per-ip: {algorithm: fixed_window, limit: 1000000, window: 1h}
  per-user: {algorithm: fixed_window, limit: 1000000, window: 1h, key: "header:X-User"}
routes: [{name: all, limiters: [per-ip, per-user]}]
)",
      "proxy.yaml", [](std::string_view) { return std::nullopt; }));
  telemetry::Metrics metrics(1);
  const live::Generation generation(config, nullptr, metrics);
  std::vector<std::string> clients;  // the requests' header values refer to them
  for (int i = 0; i < 1000; ++i) {
    clients.push_back("172.16." + std::to_string(i / 250) + "." + std::to_string(i % 250));
  }
  const std::array<std::string, 3> users{"user-0", "user-1", "user-2"};
  std::vector<test::PipelineFixture::Request> requests;
  for (std::size_t i = 0; i < clients.size(); ++i) {
    requests.push_back({.method = "GET",
                        .target = "/",
                        .host = "api.example.com",
                        .headers = {{"X-Forwarded-For", clients[i]}, {"X-User", users[i % 3]}},
                        .peer = "127.0.0.1"});
  }
  TimePoint now = at(0s);
  const auto run = [&] {
    for (int round = 0; round < 5; ++round) {
      for (const test::PipelineFixture::Request& request : requests) {
        now += 1ms;  // 5 s a run: a new ten-second window every other run
        const pipeline::RequestView view = test::PipelineFixture::view_of(request);
        const pipeline::Decision decision = generation.pipeline.decide(view, now);
        live::count_top_keys(generation, 0, decision, view, now);
      }
    }
  };
  run();
  EXPECT_EQ(allocations_during(run), 0U);
  const std::vector<telemetry::HeaviestKey> users_counted =
      generation.heavy_hitters->heaviest(1, 3, now);
  ASSERT_EQ(users_counted.size(), 3U);
  EXPECT_EQ(users_counted[0].requests, 3340U);  // 3 users in 16 places: exact
  EXPECT_TRUE(generation.heavy_hitters->heaviest(0, 1, now).at(0).text.starts_with("172.16."));
}

TEST(Allocation, AVerifiedCallersRepeatedTokenNeverAllocates) {
  // SPEC §8: a token verified once is a lookup until it expires, its claims keys and a tier.
  constexpr std::int64_t kMinted = 1'800'000'000;
  const test::MintedJwts minted = test::mint_jwts(kMinted);
  ASSERT_FALSE(minted.by_algorithm.empty()) << "the minting script ran";
  const test::TempDirectory directory("sluice-allocation");
  const std::string pem =
      directory.write("idp.pem", minted.by_algorithm.at("ES256").public_pem).string();
  test::PipelineFixture fixture(R"(
upstream: http://127.0.0.1:9000
auth: {jwt: {idp: {issuer: "https://idp.test/", keys: [{file: ")" +
                                pem + R"(", alg: ES256}]}}}
limiters:
  per-user: {algorithm: sliding_window, limit: 100000, window: 1m, key: "jwt:org.id+jwt:sub",
             tier: "jwt:plan", tiers: {pro: {limit: 200000}}}
routes: [{name: api, auth: {jwt: idp}, limiters: [per-user]}]
)");
  const std::string authorization = "Bearer " + minted.by_algorithm.at("ES256").token;
  const test::PipelineFixture::Request request{.headers = {{"Authorization", authorization}}};
  TimePoint now = TimePoint(std::chrono::seconds(kMinted));
  const auto run = [&] {
    for (int i = 0; i < 10'000; ++i) {
      now += 1ms;
      const pipeline::Decision decision = fixture.send(request, now);
      ASSERT_EQ(decision.outcome, pipeline::Outcome::allowed);
      ASSERT_TRUE(decision.auth.cached || i == 0);
    }
  };
  run();
  EXPECT_EQ(allocations_during(run), 0U);
}

TEST(Allocation, MatchingDescriptorsNeverAllocates) {
  const config::ProxyConfig config = config::parse_config(
      R"(
upstream: http://127.0.0.1:9000
limiters:
  a: {algorithm: fixed_window, limit: 10, window: 1m}
  b: {algorithm: fixed_window, limit: 10, window: 1m}
routes: [{name: all}]
rls:
  - domain: edge
    descriptors:
      - {key: remote_address, limiter: a}
      - {entries: [tenant, user], limiter: a}
      - {entries: [tenant=acme, user], limiter: b}
)",
      "proxy.yaml", [](std::string_view) { return std::optional<std::string>(); });
  const pipeline::DescriptorRules rules(config);
  using Entry = pipeline::DescriptorEntry;
  const std::array<Entry, 2> tenant{Entry{"tenant", "acme"}, Entry{"user", "a-long-user-name"}};
  const std::array<Entry, 1> address{Entry{"remote_address", "198.51.100.23"}};
  std::string key;
  std::size_t found = 0;
  const auto run = [&] {
    for (int i = 0; i < 1000; ++i) {
      const std::size_t domain = *rules.domain("edge");
      std::array<const config::RlsRule*, 2> matched{rules.match(domain, tenant),
                                                    rules.match(domain, address)};
      pipeline::drop_replaced(matched);
      for (const config::RlsRule* rule : matched) {
        found += rules.limiter_index(*rule);
      }
      pipeline::descriptor_key(tenant, key);
      pipeline::descriptor_key(address, key);
    }
  };
  run();  // the key's buffer grows once
  EXPECT_EQ(allocations_during(run), 0U);
  EXPECT_EQ(found, 2000U);  // two runs of 1000 requests, each b (index 1) and a (index 0)
}

}  // namespace
}  // namespace sluice::limiter
