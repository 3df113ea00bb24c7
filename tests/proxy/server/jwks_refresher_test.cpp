// A provider whose key set is fetched from a real key endpoint (tests/support/jwks_server.py)
// while the proxy serves: the set fetched, a rotated key found after a token names it, at most
// one fetch per pause however many tokens name unknown keys, and the metrics that show it.
#include "proxy/server/jwks_refresher.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <boost/json/serialize.hpp>
#include <thread>

#include "tests/support/eventually.hpp"
#include "tests/support/jwks_server.hpp"
#include "tests/support/minted_jwts.hpp"
#include "tests/support/proxy_fixture.hpp"
#include "tests/support/temp_directory.hpp"

namespace sluice::test {
namespace {

using namespace std::chrono_literals;
using ::testing::HasSubstr;

std::string key_set(const MintedJwts& minted, std::initializer_list<const char*> algorithms) {
  std::string text = R"({"keys":[)";
  for (const char* algorithm : algorithms) {
    text += (text.back() == '[' ? "" : ",") +
            boost::json::serialize(minted.by_algorithm.at(algorithm).jwk);
  }
  return text + "]}";
}

TEST(JwksRefresher, FetchesTheKeySetAndAgainWhenATokenNamesAKeyItLacks) {
  const MintedJwts minted = mint_jwts_now();
  ASSERT_FALSE(minted.by_algorithm.empty()) << "the minting script ran";
  const TempDirectory directory("sluice-jwks-refresh");
  const std::string file = directory.write("jwks.json", key_set(minted, {"ES256"})).string();
  const JwksServer keys(file);
  ProxyFixture proxy(
      "auth:\n  jwt:\n    idp: {issuer: \"https://idp.test/\", algorithms: "
      "[ES256, RS256], jwks: {url: \"" +
      keys.url() +
      "\"}}\n"
      "routes: [{name: api, auth: {jwt: idp}}]");
  const auto status_with = [&](const char* algorithm) {
    auto request = get("/api");
    request.set(http::field::authorization, "Bearer " + minted.by_algorithm.at(algorithm).token);
    return proxy.send(request);
  };
  const auto holds_soon = [](std::chrono::seconds limit, auto condition) {
    for (auto until = std::chrono::steady_clock::now() + limit;
         std::chrono::steady_clock::now() < until; std::this_thread::sleep_for(100ms)) {
      if (condition()) {
        return true;
      }
    }
    return false;
  };
  // The fixture builds its configuration without fetching: the refresher fetches the set still
  // empty within a tick.
  EXPECT_TRUE(holds_soon(5s, [&] { return status_with("ES256").result() == http::status::ok; }));
  EXPECT_EQ(keys.fetches(), 1);

  // The provider rotates: a token signed with a key the set lacks is refused, then the set is
  // fetched again, once, however many such tokens come in the pause.
  const auto refused = status_with("RS256");
  EXPECT_EQ(refused.result(), http::status::unauthorized);
  EXPECT_EQ(refused[http::field::www_authenticate],
            "Bearer error=\"invalid_token\", error_description=\"unknown_key\"");
  directory.write("jwks.json", key_set(minted, {"ES256", "RS256"}));
  EXPECT_TRUE(holds_soon(15s, [&] { return status_with("RS256").result() == http::status::ok; }));
  EXPECT_EQ(keys.fetches(), 2);
  EXPECT_EQ(status_with("ES256").result(), http::status::ok);  // the old key stays in the set

  EXPECT_TRUE(admin_shows(proxy.admin_port(), "/metrics",
                          "sluice_jwks_refreshes_total{provider=\"idp\",result=\"ok\"} 2\n"));
  const std::string metrics = proxy.send(get("/metrics"), true).body();
  EXPECT_THAT(metrics,
              HasSubstr("sluice_jwks_refreshes_total{provider=\"idp\",result=\"failed\"} 0\n"));
  EXPECT_THAT(
      metrics,
      ::testing::ContainsRegex(
          "sluice_jwt_verifications_total\\{provider=\"idp\",result=\"unknown_key\"\\} [1-9]"));
  EXPECT_THAT(
      metrics,
      ::testing::ContainsRegex(
          "sluice_jwt_verifications_total\\{provider=\"idp\",result=\"verified\"\\} [1-9]"));
}

}  // namespace
}  // namespace sluice::test
