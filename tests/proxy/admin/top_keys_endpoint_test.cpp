// GET /top over real sockets: requests through the proxy, then the admin port's heaviest keys.
#include "proxy/admin/top_keys_endpoint.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <array>
#include <boost/json/parse.hpp>
#include <boost/json/value.hpp>
#include <cstdio>
#include <string>

#include "limiter/key_hash.hpp"
#include "tests/support/redis_server.hpp"
#include "tests/support/reloadable_proxy.hpp"
#include "tests/support/shell.hpp"

namespace sluice::test {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
namespace json = boost::json;

const std::string kTopKeysConfig =
    "trusted_proxies: [\"127.0.0.1/32\"]\n"
    "limiters:\n"
    "  per-ip: {algorithm: fixed_window, limit: 3, window: 1h}\n"
    "  per-user: {algorithm: fixed_window, limit: 100, window: 1h, key: \"header:X-User\"}\n"
    "  per-ip-user: {algorithm: fixed_window, limit: 100, window: 1h, key: \"ip+header:X-User\"}\n"
    "routes: [{name: all, limiters: [per-ip, per-user, per-ip-user]}]\n";

/// `times` requests from `client` (through the trusted proxy) as user `user`.
void send_from(ReloadableProxy& proxy, const std::string& client, const std::string& user,
               int times) {
  for (int i = 0; i < times; ++i) {
    auto request = get("/");
    request.set("X-Forwarded-For", client);
    request.set("X-User", user);
    proxy.send(request);
  }
}

json::value top(ReloadableProxy& proxy, const std::string& query) {
  const auto response = proxy.send(get("/top" + query), true);
  EXPECT_EQ(response.result(), http::status::ok) << response.body();
  EXPECT_EQ(response[http::field::content_type], "application/json");
  return json::parse(response.body());
}

std::string hash_text(std::string_view key) {
  std::array<char, 32> text{};
  std::snprintf(text.data(), text.size(), "hash:%016llx",
                static_cast<unsigned long long>(limiter::hash_key(key)));
  return text.data();
}

TEST(TopKeys, ListsALimitersHeaviestKeysWithExactCounts) {
  ReloadableProxy proxy(kTopKeysConfig);
  send_from(proxy, "10.0.0.1", "alice", 5);  // the last 2 limited by per-ip
  send_from(proxy, "10.0.0.2", "alice", 2);
  send_from(proxy, "10.0.0.3", "bob", 1);
  const json::value answer = top(proxy, "?limiter=per-ip&n=2");
  EXPECT_EQ(answer, json::parse(R"({"limiter":"per-ip","window_seconds":60,"keys":[
      {"key":"10.0.0.1","secret":false,"requests":5,"limited":2,"remaining":0},
      {"key":"10.0.0.2","secret":false,"requests":2,"limited":0,"remaining":1}]})"));
}

TEST(TopKeys, LeavesRemainingToASharedStore) {
  // With Redis, the counts are there: this process's memory limiters would say "full".
  const RedisServer redis;
  ReloadableProxy proxy("store: {type: redis, redis: {url: \"" + redis.url() + "\"}}\n" +
                        kTopKeysConfig);
  send_from(proxy, "10.0.0.1", "alice", 4);  // the last one limited by per-ip, in Redis
  const json::value answer = top(proxy, "?limiter=per-ip");
  EXPECT_EQ(answer, json::parse(R"({"limiter":"per-ip","window_seconds":60,"keys":[
      {"key":"10.0.0.1","secret":false,"requests":4,"limited":1,"remaining":null}]})"));
}

TEST(TopKeys, GivesAnOverriddenKeyItsOverridesRemaining) {
  ReloadableProxy proxy(
      "trusted_proxies: [\"127.0.0.1/32\"]\n"
      "limiters:\n"
      "  per-ip: {algorithm: fixed_window, limit: 3, window: 1h,\n"
      "           overrides: {\"10.0.0.9\": {limit: 10}}}\n"
      "routes: [{name: all, limiters: [per-ip]}]\n");
  send_from(proxy, "10.0.0.9", "nobody", 5);
  send_from(proxy, "10.0.0.1", "nobody", 4);
  EXPECT_EQ(top(proxy, "?limiter=per-ip"), json::parse(R"({"limiter":"per-ip","window_seconds":60,
      "keys":[{"key":"10.0.0.9","secret":false,"requests":5,"limited":0,"remaining":5},
              {"key":"10.0.0.1","secret":false,"requests":4,"limited":1,"remaining":0}]})"));
}

TEST(TopKeys, ShowsSecretKeysAsTheirHashOnly) {
  ReloadableProxy proxy(kTopKeysConfig);
  send_from(proxy, "10.0.0.1", "alice-secret-token", 5);
  send_from(proxy, "10.0.0.2", "bob", 1);
  const auto response = proxy.send(get("/top"), true);
  EXPECT_THAT(response.body(), Not(HasSubstr("alice")));
  EXPECT_THAT(response.body(), Not(HasSubstr("bob")));
  const json::value answer = json::parse(response.body());
  const json::array& limiters = answer.at("limiters").as_array();
  ASSERT_EQ(limiters.size(), 3U);  // every limiter, in config order
  EXPECT_EQ(limiters[0].at("limiter"), "per-ip");
  EXPECT_EQ(limiters[0].at("keys").as_array().size(), 2U);
  // The header's value, hashed as the access log's `key` shows it. The requests limited by
  // per-ip were not charged here (all or nothing): 100 - 3.
  EXPECT_EQ(limiters[1],
            json::parse(R"({"limiter":"per-user","keys":[
      {"key":")" + hash_text("alice-secret-token") +
                        R"(","secret":true,"requests":5,"limited":0,"remaining":97},
      {"key":")" + hash_text("bob") +
                        R"(","secret":true,"requests":1,"limited":0,"remaining":99}]})"));
  // A composite key is secret when any part is.
  const json::value& composite = limiters[2].at("keys").at(0);
  EXPECT_EQ(composite.at("secret"), true);
  EXPECT_EQ(composite.at("key"),
            json::value(hash_text(std::string("10.0.0.1\x1f") + "alice-secret-token")));
  EXPECT_EQ(answer.at("window_seconds"), 60);
}

TEST(TopKeys, WritesMarkupInAKeyAsInertJson) {
  // A verified token's claim is shown as it is: escaped, it reads back the same and never as
  // markup.
  const std::string secret = "top-keys-test-secret-of-32-bytes";
  ReloadableProxy proxy(
      "auth:\n  jwt:\n    idp:\n      issuer: \"https://idp.test/\"\n"
      "      keys: [{secret: \"" +
      secret +
      "\", alg: HS256}]\n"
      "limiters: {per-user: {algorithm: fixed_window, limit: 2, window: 1h, "
      "key: \"jwt:sub\"}}\n"
      "routes: [{name: api, auth: {jwt: idp}, limiters: [per-user]}]");
  const std::string sub = "<script>alert(\"x\")</script>&";
  const std::string token = output_of(
      "/usr/bin/python3 -c 'import jwt, time; print(jwt.encode({\"sub\": \"<script>alert(\\\"x\\\")"
      "</script>&\", \"iss\": \"https://idp.test/\", \"exp\": int(time.time()) + 3600}, \"" +
      secret + "\", algorithm=\"HS256\"))'");
  ASSERT_FALSE(token.empty()) << "PyJWT minted a token";
  auto request = get("/");
  request.set(http::field::authorization, "Bearer " + token.substr(0, token.size() - 1));
  for (int i = 0; i < 3; ++i) {
    proxy.send(request);
  }
  const auto response = proxy.send(get("/top?limiter=per-user"), true);
  EXPECT_THAT(response.body(), Not(HasSubstr("<")));
  EXPECT_THAT(response.body(), Not(HasSubstr(">")));
  EXPECT_THAT(response.body(),
              HasSubstr(R"(\u003cscript\u003ealert(\"x\")\u003c/script\u003e\u0026)"));
  const json::value key = json::parse(response.body()).at("keys").at(0);
  EXPECT_EQ(key.at("key"), json::value(sub));
  EXPECT_EQ(key.at("secret"), false);
  EXPECT_EQ(key.at("requests"), 3);
  EXPECT_EQ(key.at("limited"), 1);
}

TEST(TopKeys, RefusesAnUnknownLimiterAndABadCount) {
  ReloadableProxy proxy(kTopKeysConfig);
  const auto unknown = proxy.send(get("/top?limiter=per-host"), true);
  EXPECT_EQ(unknown.result(), http::status::not_found);
  EXPECT_EQ(unknown[http::field::content_type], "application/problem+json");
  EXPECT_THAT(unknown.body(), HasSubstr(R"("detail":"no limiter named per-host")"));
  for (const std::string n : {"abc", "0", "101", "-1", "5x", ""}) {
    const auto bad = proxy.send(get("/top?limiter=per-ip&n=" + n), true);
    EXPECT_EQ(bad.result(), http::status::bad_request) << n;
    EXPECT_EQ(bad[http::field::content_type], "application/problem+json");
    EXPECT_THAT(bad.body(),
                HasSubstr(R"("detail":"n: \")" + n + R"(\" is not a whole number from 1 to 100")"));
  }
  EXPECT_EQ(proxy.send(get("/top?n=100"), true).result(), http::status::ok);
}

TEST(TopKeys, IsOffWithTopKeysZero) {
  ReloadableProxy proxy("top_keys: 0\n" + kTopKeysConfig);
  send_from(proxy, "10.0.0.1", "alice", 1);
  const auto off = proxy.send(get("/top?limiter=per-ip"), true);
  EXPECT_EQ(off.result(), http::status::not_found);
  EXPECT_THAT(off.body(), HasSubstr("top_keys is 0"));
}

}  // namespace
}  // namespace sluice::test
