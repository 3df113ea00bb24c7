// Runtime control on the admin port over real sockets (SPEC §10): reset, overrides, bans, their
// auth, and that they survive a reload; with a Redis store, that another replica obeys them.
#include "proxy/admin/runtime_control.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <boost/json/parse.hpp>
#include <boost/json/value.hpp>
#include <chrono>
#include <string>
#include <thread>

#include "tests/support/eventually.hpp"
#include "tests/support/proxy_fixture.hpp"
#include "tests/support/redis_server.hpp"
#include "tests/support/reloadable_proxy.hpp"

namespace sluice::test {
namespace {

using ::testing::HasSubstr;
using namespace std::chrono_literals;

const std::string kPerClient =
    "limiters:\n  per-client: {algorithm: fixed_window, limit: 2, window: 1h, "
    "key: \"header:X-Client\"}\n"
    "routes: [{name: all, limiters: [per-client]}]\n";

/// A request from client `client` (its X-Client header) through the proxy: its status.
unsigned from(ReloadableProxy& proxy, const std::string& client) {
  auto request = get("/");
  request.set("X-Client", client);
  return proxy.send(std::move(request)).result_int();
}

http::request<http::string_body> admin_request(http::verb method, std::string target,
                                               std::string body = "", std::string_view token = "") {
  http::request<http::string_body> request{method, target, 11};
  request.body() = std::move(body);
  if (!token.empty()) {
    request.set(http::field::authorization, "Bearer " + std::string(token));
  }
  return request;
}

/// The status of a write sent to `proxy`'s admin port.
http::status admin_write(ReloadableProxy& proxy, http::verb method, std::string target,
                         std::string body = "") {
  return proxy.send(admin_request(method, std::move(target), std::move(body)), true).result();
}

boost::json::value json_of(const http::response<http::string_body>& response) {
  return boost::json::parse(response.body());
}

TEST(RuntimeControl, AResetKeyFindsAFullBudget) {
  ReloadableProxy proxy(kPerClient);
  EXPECT_EQ(from(proxy, "a"), 200U);
  EXPECT_EQ(from(proxy, "a"), 200U);
  EXPECT_EQ(from(proxy, "a"), 429U);
  EXPECT_EQ(from(proxy, "b"), 200U);
  EXPECT_EQ(from(proxy, "b"), 200U);

  const auto reset = proxy.send(admin_request(http::verb::delete_, "/limiters/per-client/a"), true);

  EXPECT_EQ(reset.result(), http::status::ok);
  EXPECT_EQ(json_of(reset),
            boost::json::parse(R"({"limiter":"per-client","key":"a","reset":true})"));
  EXPECT_EQ(from(proxy, "a"), 200U);
  EXPECT_EQ(from(proxy, "a"), 200U);
  EXPECT_EQ(from(proxy, "a"), 429U);
  EXPECT_EQ(from(proxy, "b"), 429U);  // other keys keep their counts
  EXPECT_THAT(proxy.send(get("/metrics"), true).body(),
              HasSubstr("sluice_admin_writes_total{action=\"reset\",result=\"ok\"} 1\n"));
}

TEST(RuntimeControl, AnOverrideRaisesOrLowersOneKeysLimitUntilItExpires) {
  ReloadableProxy proxy(kPerClient);
  const auto raised = proxy.send(
      admin_request(http::verb::put, "/limiters/per-client/vip", R"({"limit": 4, "for": "1h"})"),
      true);
  ASSERT_EQ(raised.result(), http::status::ok) << raised.body();
  EXPECT_EQ(json_of(raised),
            boost::json::parse(R"({"limiter":"per-client","key":"vip","parameters":{"limit":4},
                                  "expires_in":3600})"));
  const auto lowered = proxy.send(
      admin_request(http::verb::put, "/limiters/per-client/noisy", R"({"limit": 1, "for": "2s"})"),
      true);
  ASSERT_EQ(lowered.result(), http::status::ok) << lowered.body();

  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ(from(proxy, "vip"), 200U) << i;
  }
  EXPECT_EQ(from(proxy, "vip"), 429U);
  EXPECT_EQ(from(proxy, "noisy"), 200U);
  EXPECT_EQ(from(proxy, "noisy"), 429U);
  EXPECT_EQ(from(proxy, "plain"), 200U);
  EXPECT_EQ(from(proxy, "plain"), 200U);
  EXPECT_EQ(from(proxy, "plain"), 429U);
  const auto state = proxy.send(get("/limiters/per-client/vip"), true);
  EXPECT_EQ(json_of(state).at("remaining"), 0);

  const auto listed = json_of(proxy.send(get("/overrides"), true));
  ASSERT_EQ(listed.at("overrides").as_array().size(), 2U);
  // Keys read from a header may be secrets: a read shows their hash, never the key.
  for (const auto& item : listed.at("overrides").as_array()) {
    EXPECT_TRUE(item.at("key").as_string().starts_with("hash:")) << item;
  }

  // The lowered one ends after its 2 s: the limiter's own limit of 2 counts again, afresh.
  std::this_thread::sleep_for(2100ms);
  EXPECT_EQ(from(proxy, "noisy"), 200U);
  EXPECT_EQ(from(proxy, "noisy"), 200U);
  EXPECT_EQ(from(proxy, "noisy"), 429U);
  EXPECT_EQ(json_of(proxy.send(get("/overrides"), true)).at("overrides").as_array().size(), 1U);

  // Ended early, the raised one gives the key the limiter's own parameters back.
  const auto ended =
      proxy.send(admin_request(http::verb::delete_, "/overrides/per-client/vip"), true);
  EXPECT_EQ(ended.result(), http::status::ok);
  EXPECT_EQ(from(proxy, "vip"), 200U);
  EXPECT_EQ(from(proxy, "vip"), 200U);
  EXPECT_EQ(from(proxy, "vip"), 429U);
  EXPECT_EQ(
      proxy.send(admin_request(http::verb::delete_, "/overrides/per-client/vip"), true).result(),
      http::status::not_found);
}

TEST(RuntimeControl, ABanRefusesTheClientAndAnUnbanLetsItBackIn) {
  ReloadableProxy proxy(kForwardAll);
  const auto banned =
      proxy.send(admin_request(http::verb::put, "/bans/127.0.0.1", R"({"for": "10m"})"), true);
  ASSERT_EQ(banned.result(), http::status::ok) << banned.body();
  EXPECT_EQ(json_of(banned), boost::json::parse(R"({"ip":"127.0.0.1","banned_for":600})"));

  const auto refused = proxy.send(get("/"));
  EXPECT_EQ(refused.result(), http::status::forbidden);
  EXPECT_EQ(refused[http::field::retry_after], "600");
  EXPECT_EQ(json_of(proxy.send(get("/bans"), true)),
            boost::json::parse(R"({"bans":[{"ip":"127.0.0.1","banned_for":600}]})"));
  EXPECT_EQ(json_of(proxy.send(get("/limiters/nothing/127.0.0.1"), true)).at("title"), "Not Found");

  EXPECT_EQ(proxy.send(admin_request(http::verb::delete_, "/bans/127.0.0.1"), true).result(),
            http::status::ok);
  EXPECT_EQ(proxy.send(get("/")).result(), http::status::ok);
  EXPECT_EQ(proxy.send(admin_request(http::verb::delete_, "/bans/127.0.0.1"), true).result(),
            http::status::not_found);
}

TEST(RuntimeControl, UnbanLiftsABanThatTheBanRuleGave) {
  ReloadableProxy proxy(
      "limiters:\n  one: {algorithm: fixed_window, limit: 1, window: 1h, key: ip}\n"
      "ban: {after: 1, within: 1m, for: 10m}\n"
      "routes: [{name: all, limiters: [one]}]\n");
  EXPECT_EQ(proxy.send(get("/")).result(), http::status::ok);
  EXPECT_EQ(proxy.send(get("/")).result(), http::status::too_many_requests);
  EXPECT_EQ(proxy.send(get("/")).result(), http::status::forbidden);

  EXPECT_EQ(proxy.send(admin_request(http::verb::delete_, "/bans/127.0.0.1"), true).result(),
            http::status::ok);
  EXPECT_EQ(
      proxy.send(admin_request(http::verb::delete_, "/limiters/one/127.0.0.1"), true).result(),
      http::status::ok);
  EXPECT_EQ(proxy.send(get("/")).result(), http::status::ok);
}

TEST(RuntimeControl, OverridesAndBansSurviveAReload) {
  ReloadableProxy proxy(kPerClient);
  ASSERT_EQ(admin_write(proxy, http::verb::put, "/limiters/per-client/vip",
                        R"({"limit": 3, "for": "1h"})"),
            http::status::ok);
  ASSERT_EQ(admin_write(proxy, http::verb::put, "/bans/192.0.2.9", R"({"for": "1h"})"),
            http::status::ok);
  EXPECT_EQ(from(proxy, "vip"), 200U);

  // Another route: the generation changes, the limiter does not.
  proxy.write(
      "limiters:\n  per-client: {algorithm: fixed_window, limit: 2, window: 1h, "
      "key: \"header:X-Client\"}\n"
      "routes: [{name: other, match: {path: /other}}, {name: all, limiters: [per-client]}]\n");
  ASSERT_TRUE(proxy.reload().ok);

  EXPECT_EQ(from(proxy, "vip"), 200U);
  EXPECT_EQ(from(proxy, "vip"), 200U);
  EXPECT_EQ(from(proxy, "vip"), 429U);  // 3, counted across the reload
  EXPECT_THAT(proxy.send(get("/bans"), true).body(), HasSubstr("192.0.2.9"));

  // The limiter's window changes: the override's limit is laid over its new parameters.
  proxy.write(
      "limiters:\n  per-client: {algorithm: fixed_window, limit: 2, window: 2h, "
      "key: \"header:X-Client\"}\n"
      "routes: [{name: all, limiters: [per-client]}]\n");
  ASSERT_TRUE(proxy.reload().ok);
  EXPECT_TRUE(holds_within(3s, [&] {
    return json_of(proxy.send(get("/limiters/per-client/vip"), true)).at("remaining") == 3;
  }));
  EXPECT_EQ(from(proxy, "vip"), 200U);
  EXPECT_EQ(from(proxy, "vip"), 200U);
  EXPECT_EQ(from(proxy, "vip"), 200U);
  EXPECT_EQ(from(proxy, "vip"), 429U);
}

TEST(RuntimeControl, BadWritesAreNamedInAProblem) {
  ReloadableProxy proxy(kPerClient);
  const auto check = [&proxy](http::verb method, const std::string& target, const std::string& body,
                              http::status status, const std::string& detail) {
    const auto response = proxy.send(admin_request(method, target, body), true);
    EXPECT_EQ(response.result(), status) << target << " " << body;
    EXPECT_EQ(response[http::field::content_type], "application/problem+json");
    EXPECT_THAT(response.body(), HasSubstr(detail)) << target << " " << body;
  };
  const auto put = http::verb::put;
  const auto delete_ = http::verb::delete_;
  check(put, "/limiters/nobody/a", R"({"limit": 1, "for": "1h"})", http::status::not_found,
        "no limiter named nobody");
  check(delete_, "/limiters/nobody/a", "", http::status::not_found, "no limiter named nobody");
  check(put, "/limiters/per-client/a", "{limit: 1", http::status::bad_request,
        "the body is not a JSON object");
  check(put, "/limiters/per-client/a", R"({"limit": 1})", http::status::bad_request,
        "for: missing");
  check(put, "/limiters/per-client/a", R"({"limit": 1, "for": "soon"})", http::status::bad_request,
        "for: expected a duration");
  check(put, "/limiters/per-client/a", R"({"rate": "5/s", "for": "1h"})", http::status::bad_request,
        "rate");
  check(put, "/limiters/per-client/a", R"({"limit": 0, "for": "1h"})", http::status::bad_request,
        "limit");
  check(put, "/limiters/per-client/a", R"({"window": "often", "for": "1h"})",
        http::status::bad_request, "window");
  check(put, "/limiters/per-client/a", R"({"for": "1h"})", http::status::bad_request,
        "limit, window, calendar or timezone");
  check(put, "/bans/not-an-ip", R"({"for": "1h"})", http::status::bad_request, "not an IP address");
  check(put, "/bans/192.0.2.1", R"({"for": "1h", "why": "spam"})", http::status::bad_request,
        "why: a ban takes only");
  check(delete_, "/overrides/per-client/nobody", "", http::status::not_found, "no override");
  EXPECT_THAT(proxy.send(get("/metrics"), true).body(),
              HasSubstr("sluice_admin_writes_total{action=\"override\",result=\"invalid\"} 8\n"));
  EXPECT_EQ(json_of(proxy.send(get("/overrides"), true)),
            boost::json::parse(R"({"overrides":[]})"));
}

TEST(RuntimeControl, WithATokenEveryWriteNeedsIt) {
  const std::string token = "s3cret-admin-token";
  ReloadableProxy proxy("admin_token: \"" + token + "\"\n" + kPerClient);
  const auto without =
      proxy.send(admin_request(http::verb::delete_, "/limiters/per-client/a"), true);
  EXPECT_EQ(without.result(), http::status::unauthorized);
  EXPECT_EQ(without[http::field::www_authenticate], "Bearer");
  EXPECT_EQ(without[http::field::content_type], "application/problem+json");
  EXPECT_EQ(proxy
                .send(admin_request(http::verb::put, "/bans/192.0.2.1", R"({"for": "1h"})",
                                    "s3cret-admin-tokeN"),
                      true)
                .result(),
            http::status::unauthorized);
  EXPECT_EQ(proxy.send(post("/reload"), true).result(), http::status::unauthorized);

  EXPECT_EQ(
      proxy.send(admin_request(http::verb::delete_, "/limiters/per-client/a", "", token), true)
          .result(),
      http::status::ok);
  auto reload = post("/reload");
  reload.set(http::field::authorization, "Bearer " + token);
  EXPECT_EQ(proxy.send(std::move(reload), true).result(), http::status::ok);
  // Reads stay open, and never show the token.
  const auto config = proxy.send(get("/config"), true);
  EXPECT_EQ(config.result(), http::status::ok);
  EXPECT_THAT(config.body(), ::testing::Not(HasSubstr(token)));
  EXPECT_THAT(config.body(), HasSubstr("\"admin_token\":\"***\""));
  EXPECT_EQ(proxy.send(get("/overrides"), true).result(), http::status::ok);
  const std::string metrics = proxy.send(get("/metrics"), true).body();
  EXPECT_THAT(metrics,
              HasSubstr("sluice_admin_writes_total{action=\"reset\",result=\"refused\"} 1\n"));
  EXPECT_THAT(metrics,
              HasSubstr("sluice_admin_writes_total{action=\"ban\",result=\"refused\"} 1\n"));
  EXPECT_THAT(metrics,
              HasSubstr("sluice_admin_writes_total{action=\"reload\",result=\"refused\"} 1\n"));
  EXPECT_THAT(metrics, HasSubstr("sluice_admin_writes_total{action=\"reload\",result=\"ok\"} 1\n"));
}

TEST(RuntimeControl, WithoutATokenWritesNeedALoopbackAdminAddress) {
  ReloadableProxy proxy(kPerClient,
                        "listen: \"127.0.0.1:0\"\nadmin: \"0.0.0.0:0\"\nthreads: 2\n"
                        "log: {access: false}\n");
  const auto refused =
      proxy.send(admin_request(http::verb::delete_, "/limiters/per-client/a"), true);
  EXPECT_EQ(refused.result(), http::status::forbidden);
  EXPECT_THAT(refused.body(), HasSubstr("admin_token"));
  EXPECT_EQ(proxy.send(get("/limiters/per-client/a"), true).result(), http::status::ok);
}

// The issue's test: two replicas on one Redis; what one is told, the other obeys within a second.
TEST(RuntimeControl, TwoReplicasOnOneRedisObeyEachOthersWritesWithinASecond) {
  const RedisServer redis;
  const std::string config =
      "store: {type: redis, redis: {url: \"" + redis.url() + "\"}}\n" + kPerClient;
  ReloadableProxy one(config);
  ReloadableProxy two(config);

  // An override set on one is obeyed by the other.
  ASSERT_EQ(one.send(admin_request(http::verb::put, "/limiters/per-client/vip",
                                   R"({"limit": 5, "for": "1h"})"),
                     true)
                .result(),
            http::status::ok);
  const auto set_at = std::chrono::steady_clock::now();
  EXPECT_TRUE(holds_within(1s, [&] {
    return json_of(two.send(get("/limiters/per-client/vip"), true)).at("remaining") == 5;
  }));
  EXPECT_LE(std::chrono::steady_clock::now() - set_at, 1100ms);
  for (int i = 0; i < 5; ++i) {
    EXPECT_EQ(from(i % 2 == 0 ? one : two, "vip"), 200U) << i;  // one count in Redis for both
  }
  EXPECT_EQ(from(two, "vip"), 429U);
  EXPECT_EQ(from(one, "vip"), 429U);
  EXPECT_THAT(two.send(get("/overrides"), true).body(), HasSubstr("\"limit\":5"));

  // A reset on two gives the key a full budget on one.
  ASSERT_EQ(two.send(admin_request(http::verb::delete_, "/limiters/per-client/vip"), true).result(),
            http::status::ok);
  // (one may have remembered the key as over its limit: it learns of the reset within a second)
  EXPECT_TRUE(holds_within(1s, [&] { return from(one, "vip") == 200U; }));

  // A ban set on two is obeyed by one; lifted on one, by two.
  ASSERT_EQ(two.send(admin_request(http::verb::put, "/bans/127.0.0.1", R"({"for": "10m"})"), true)
                .result(),
            http::status::ok);
  EXPECT_TRUE(holds_within(1s, [&] { return one.send(get("/")).result_int() == 403; }));
  ASSERT_EQ(one.send(admin_request(http::verb::delete_, "/bans/127.0.0.1"), true).result(),
            http::status::ok);
  EXPECT_TRUE(holds_within(1s, [&] { return two.send(get("/")).result_int() != 403; }));

  // An override ended on two ends on one.
  ASSERT_EQ(
      two.send(admin_request(http::verb::delete_, "/overrides/per-client/vip"), true).result(),
      http::status::ok);
  EXPECT_TRUE(holds_within(1s, [&] {
    return json_of(one.send(get("/overrides"), true)).at("overrides").as_array().empty();
  }));
}

TEST(RuntimeControl, OverridesInRedisSurviveAReplicasRestart) {
  const RedisServer redis;
  const std::string config =
      "store: {type: redis, redis: {url: \"" + redis.url() + "\"}}\n" + kPerClient;
  {
    ReloadableProxy before(config);
    ASSERT_EQ(admin_write(before, http::verb::put, "/limiters/per-client/vip",
                          R"({"limit": 7, "for": "1h"})"),
              http::status::ok);
  }
  ReloadableProxy after(config);
  EXPECT_TRUE(holds_within(2s, [&] {
    return json_of(after.send(get("/limiters/per-client/vip"), true)).at("remaining") == 7;
  }));
}

}  // namespace
}  // namespace sluice::test
