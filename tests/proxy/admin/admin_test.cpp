// The admin port over real sockets: /metrics, /config, POST /reload (also under traffic), and
// the pieces behind them.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <boost/json/parse.hpp>
#include <boost/json/value.hpp>
#include <filesystem>
#include <fstream>
#include <thread>

#include "proxy/admin/config_json.hpp"
#include "proxy/live/reloader.hpp"
#include "proxy/telemetry/access_log.hpp"
#include "tests/support/proxy_fixture.hpp"
#include "tests/support/redis_server.hpp"
#include "tests/support/reloadable_proxy.hpp"
#include "tests/support/shell.hpp"

namespace sluice::test {
namespace {

using ::testing::HasSubstr;

using sluice::test::output_of;

const std::string kOneLimiter =
    "limiters:\n  one: {algorithm: fixed_window, limit: 3, window: 1h}\n"
    "routes: [{name: all, limiters: [one]}]\n";

TEST(AdminPort, ExposesPrometheusMetrics) {
  ReloadableProxy proxy(kOneLimiter);
  for (int i = 0; i < 4; ++i) {
    proxy.send(get("/"));
  }
  const auto metrics = proxy.send(get("/metrics"), true);
  EXPECT_EQ(metrics.result(), http::status::ok);
  EXPECT_THAT(metrics[http::field::content_type], HasSubstr("text/plain; version=0.0.4"));
  const std::string body =
      proxy.metrics_once("sluice_request_duration_seconds_count{route=\"all\"} 4\n");
  EXPECT_THAT(body, HasSubstr("sluice_requests_total{route=\"all\",decision=\"allowed\"} 3\n"));
  EXPECT_THAT(body, HasSubstr("sluice_requests_total{route=\"all\",decision=\"limited\"} 1\n"));
  EXPECT_THAT(body, HasSubstr("sluice_request_duration_seconds_count{route=\"all\"} 4\n"));
  EXPECT_THAT(body,
              HasSubstr("sluice_request_duration_seconds_bucket{route=\"all\",le=\"+Inf\"} 4\n"));
  EXPECT_THAT(body, HasSubstr("sluice_limiter_keys{limiter=\"one\"} 1\n"));
  EXPECT_THAT(body, HasSubstr("sluice_store_errors_total{store=\"memory\"} 0\n"));
  EXPECT_THAT(body, HasSubstr("sluice_config_reloads_total{result=\"success\"} 0\n"));
  EXPECT_THAT(body, HasSubstr("# TYPE sluice_request_duration_seconds histogram\n"));
}

TEST(AdminPort, ShowsLeasesTheirHitsAndTheirOvershootBound) {
  const sluice::test::RedisServer redis;
  auto proxy = std::make_unique<ReloadableProxy>(
      "store: {type: redis, redis: {url: \"" + redis.url() +
      "\"}}\nlimiters:\n  leased: {algorithm: fixed_window, limit: 100, "
      "window: 1h, key: global, lease: 10}\n"
      "routes: [{name: all, limiters: [leased]}]\n");
  // Each of the 2 event loops takes a lease of 10 with its first request, then spends it.
  for (int i = 0; i < 5; ++i) {
    EXPECT_EQ(proxy->send(get("/")).result(), http::status::ok);
  }
  const std::string body = proxy->send(get("/metrics"), true).body();
  const std::string hits = "sluice_store_lease_hits_total{store=\"redis\"} ";
  ASSERT_THAT(body, HasSubstr(hits));
  EXPECT_GE(std::stoi(body.substr(body.find(hits) + hits.size())), 3);
  // The loops of every replica that leases count themselves: here, this one's 2.
  EXPECT_THAT(body, HasSubstr("sluice_store_lease_holders{store=\"redis\"} 2\n"));
  EXPECT_THAT(body, HasSubstr("sluice_lease_overshoot_bound{limiter=\"leased\"} 20\n"));
  const std::string config = proxy->send(get("/config"), true).body();
  EXPECT_THAT(config, HasSubstr("\"overshoot_bound\":{\"permits\":20,\"lease_holders\":2"));

  // Stopped, it gives back what its leases hold: Redis counts the 5 requests, no more.
  proxy.reset();
  const std::string cli = "redis-cli -p " + std::to_string(redis.port()) + " ";
  const std::string key = output_of(cli + "--scan --pattern '*leased*'");
  ASSERT_FALSE(key.empty());
  EXPECT_EQ(output_of(cli + "HGET '" + key.substr(0, key.find('\n')) + "' n"), "5\n");
}

TEST(AdminPort, ReadyzAndMetricsFollowTheRedisStore) {
  const sluice::test::RedisServer redis;
  ReloadableProxy proxy("store: {type: redis, redis: {url: \"" + redis.url() +
                        "\", timeout: 20ms, on_error: deny}}\n" + kOneLimiter);
  EXPECT_EQ(proxy.send(get("/readyz"), true).result(), http::status::ok);
  EXPECT_EQ(proxy.send(get("/")).result(), http::status::ok);
  std::string body = proxy.send(get("/metrics"), true).body();
  EXPECT_THAT(body, HasSubstr("sluice_store_available{store=\"redis\"} 1\n"));
  EXPECT_THAT(body, HasSubstr("sluice_store_errors_total{store=\"redis\"} 0\n"));
  // One request, alone: one call that carried it.
  EXPECT_THAT(body, HasSubstr("sluice_store_calls_total{store=\"redis\"} 1\n"));
  EXPECT_THAT(body, HasSubstr("sluice_store_call_requests_total{store=\"redis\"} 1\n"));

  redis.pause();
  const auto denied = proxy.send(get("/"));  // fails closed: 503
  EXPECT_EQ(denied.result(), http::status::service_unavailable);
  EXPECT_EQ(denied[http::field::retry_after], "1");
  EXPECT_THAT(denied.body(), HasSubstr("\"status\":503"));
  const auto unready = proxy.send(get("/readyz"), true);
  EXPECT_EQ(unready.result(), http::status::service_unavailable);
  EXPECT_EQ(unready.body(), "store unavailable\n");
  body = proxy.send(get("/metrics"), true).body();
  EXPECT_THAT(body, HasSubstr("sluice_store_available{store=\"redis\"} 0\n"));
  EXPECT_THAT(body, HasSubstr("sluice_store_errors_total{store=\"redis\"} 1\n"));

  redis.resume();
  // No request comes (an unready replica is out of rotation): /readyz itself asks Redis.
  EXPECT_EQ(proxy.send(get("/readyz"), true).result(), http::status::ok);
  EXPECT_EQ(proxy.send(get("/")).result(), http::status::ok);
}

TEST(AdminPort, CountsUpstreamErrorsByKind) {
  ReloadableProxy proxy(
      "routes:\n  - {name: dead, match: {path: /dead}, upstream: \"http://127.0.0.1:1\"}\n"
      "  - {name: all}\n");
  EXPECT_EQ(proxy.send(get("/dead")).result(), http::status::bad_gateway);
  const std::string counted =
      "sluice_upstream_errors_total{upstream=\"http://127.0.0.1:1\",kind=\"connect\"} 1\n";
  EXPECT_THAT(proxy.metrics_once(counted), HasSubstr(counted));
}

TEST(AdminPort, ShowsTheEffectiveConfigAsJson) {
  ReloadableProxy proxy(kOneLimiter);
  const auto config = proxy.send(get("/config"), true);
  EXPECT_EQ(config.result(), http::status::ok);
  EXPECT_EQ(config[http::field::content_type], "application/json");
  EXPECT_THAT(config.body(), HasSubstr(R"("one":{"algorithm":"fixed_window","limit":3,)"
                                       R"("window":"1h","mode":"reject","key":"ip")"));
  EXPECT_THAT(config.body(), HasSubstr(R"("timeouts":{"header":"10s","idle":"1m")"));
}

TEST(AdminPort, ShowsATieredKeyAsItsTierCountsIt) {
  ReloadableProxy proxy(
      "limiters:\n  per-ip: {algorithm: fixed_window, limit: 1, window: 1h, tier: "
      "\"header:X-Plan\", "
      "tiers: {gold: {limit: 3}}}\nroutes: [{name: all, limiters: [per-ip]}]\n");
  auto gold = get("/");
  gold.set("X-Plan", "gold");
  EXPECT_EQ(proxy.send(gold).result(), http::status::ok);
  const auto tiered = proxy.send(get("/limiters/per-ip/127.0.0.1?tier=gold"), true);
  EXPECT_THAT(tiered.body(), HasSubstr(R"("remaining":2,)"));
  EXPECT_THAT(tiered.body(), HasSubstr(R"("tier":"gold")"));
  // Without the tier: the limiter's own parameters, which this key has not used.
  EXPECT_THAT(proxy.send(get("/limiters/per-ip/127.0.0.1"), true).body(),
              HasSubstr(R"("remaining":1,)"));
  // RateLimit-Policy names the tier's quota.
  EXPECT_EQ(proxy.send(gold)["RateLimit-Policy"], "\"per-ip\";q=3;w=3600");
}

TEST(AdminPort, AnswersJsonThatParsesWhateverTheNames) {
  // Names are plain (no '"' or '\\'), but may hold any other printable character.
  const std::string limiter = "q'uote <&> {x}";
  ReloadableProxy proxy(
      "limiters:\n  \"q'uote <&> {x}\": {algorithm: fixed_window, limit: 2, window: 1h}\n"
      "routes: [{name: \"r'oute /\", limiters: [\"q'uote <&> {x}\"]}]\n");
  const auto json_of = [](const http::response<http::string_body>& response) {
    boost::json::error_code error;
    boost::json::value value = boost::json::parse(response.body(), error);
    EXPECT_FALSE(error) << error.message() << " in " << response.body();
    return value;
  };

  const auto config = proxy.send(get("/config"), true);
  EXPECT_EQ(json_of(config).at("routes").at(0).at("name").as_string(), "r'oute /");

  EXPECT_EQ(proxy.send(get("/")).result(), http::status::ok);
  const auto state = proxy.send(get("/limiters/q%27uote%20%3C%26%3E%20%7Bx%7D/127.0.0.1"), true);
  ASSERT_EQ(state.result(), http::status::ok) << state.body();
  EXPECT_EQ(state[http::field::content_type], "application/json");
  EXPECT_EQ(json_of(state).at("limiter").as_string(), limiter);
  EXPECT_EQ(json_of(state).at("remaining").as_int64(), 1);
  EXPECT_FALSE(json_of(state).at("banned").as_bool());
  // An unknown limiter: 404 whose problem names it, still JSON.
  const auto unknown = proxy.send(get("/limiters/%22no%5Csuch/127.0.0.1"), true);
  EXPECT_EQ(unknown.result(), http::status::not_found);
  EXPECT_EQ(unknown[http::field::content_type], "application/problem+json");
  EXPECT_EQ(json_of(unknown).at("detail").as_string(), "no limiter named \"no\\such");

  EXPECT_EQ(proxy.send(get("/")).result(), http::status::ok);
  const auto limited = proxy.send(get("/"));  // the proxy's own problem+json names the limiter
  ASSERT_EQ(limited.result(), http::status::too_many_requests);
  EXPECT_EQ(json_of(limited).at("violated-policies").at(0).as_string(), limiter);

  proxy.write("routes: [{name: all, limiters: ['no\"such\\']}]\n");
  const auto refused = proxy.send(post("/reload"), true);
  EXPECT_EQ(refused.result(), http::status::unprocessable_entity);
  const boost::json::value errors = json_of(refused).at("errors");
  ASSERT_FALSE(errors.as_array().empty());
  EXPECT_THAT(std::string(errors.at(0).as_string()), HasSubstr("\"no\"such\\\""));

  proxy.write("routes: [{name: all}]\n");
  const auto reloaded = proxy.send(post("/reload"), true);
  EXPECT_EQ(reloaded.result(), http::status::ok);
  EXPECT_EQ(json_of(reloaded).at("result").as_string(), "success");
  EXPECT_TRUE(json_of(reloaded).at("restart_needed").as_array().empty());
}

TEST(AdminPort, ReloadKeepsUnchangedLimitersAndRefusesABrokenFile) {
  ReloadableProxy proxy(kOneLimiter);
  proxy.send(get("/"));
  proxy.send(get("/"));  // one has 1 left

  // Same `one`, a new route and a new limiter: `one` keeps its count.
  proxy.write(
      "limiters:\n  one: {algorithm: fixed_window, limit: 3, window: 1h}\n"
      "  two: {algorithm: fixed_window, limit: 100, window: 1h}\n"
      "routes:\n  - {name: status, match: {path: /status}, respond: {status: 200, body: up}}\n"
      "  - {name: all, limiters: [one, two]}\n");
  const auto reloaded = proxy.send(post("/reload"), true);
  EXPECT_EQ(reloaded.result(), http::status::ok);
  EXPECT_THAT(reloaded.body(), HasSubstr(R"("result":"success","kept_state":1)"));
  EXPECT_EQ(proxy.send(get("/status")).body(), "up");
  EXPECT_EQ(proxy.send(get("/")).result(), http::status::ok);
  EXPECT_EQ(proxy.send(get("/")).result(), http::status::too_many_requests);

  // A broken file: every error comes back, and the running config stays.
  proxy.write(
      "limiters:\n  one: {algorithm: fixed_windw, limit: 3, window: 1h}\n"
      "routes: [{name: all, limiters: [one]}]\n");
  const auto refused = proxy.send(post("/reload"), true);
  EXPECT_EQ(refused.result(), http::status::unprocessable_entity);
  EXPECT_THAT(refused.body(), HasSubstr(R"("result":"failure","errors":[)"));
  EXPECT_THAT(refused.body(), HasSubstr(".yaml:7:20: limiters.one.algorithm: "));
  EXPECT_THAT(refused.body(), HasSubstr("fixed_windw"));
  EXPECT_EQ(proxy.send(get("/status")).body(), "up");
  // The last reload is kept with what asked for it (for the admin page).
  const std::optional<live::LastReload> last = proxy.reloader().last();
  ASSERT_TRUE(last.has_value());
  EXPECT_FALSE(last->report.ok);
  EXPECT_EQ(last->trigger, "POST /reload");
  EXPECT_THAT(last->report.errors.at(0), HasSubstr("fixed_windw"));
  const std::string metrics = proxy.send(get("/metrics"), true).body();
  EXPECT_THAT(metrics, HasSubstr("sluice_config_reloads_total{result=\"success\"} 1\n"));
  EXPECT_THAT(metrics, HasSubstr("sluice_config_reloads_total{result=\"failure\"} 1\n"));
  EXPECT_EQ(proxy.send(get("/reload"), true).result(), http::status::method_not_allowed);
}

TEST(AdminPort, ReloadsUnderTrafficWithoutFailingARequest) {
  ReloadableProxy proxy("routes: [{name: all}]\n");
  std::atomic<bool> done{false};
  std::atomic<int> ok{0};
  std::atomic<int> failed{0};
  auto client = [&] {
    net::io_context io;
    beast::tcp_stream stream(io);
    stream.connect(tcp::endpoint(net::ip::make_address("127.0.0.1"), proxy.port()));
    beast::flat_buffer buffer;
    while (!done.load()) {
      auto request = get("/traffic");
      request.set(http::field::host, "a");
      beast::error_code ec;
      http::write(stream, request, ec);
      http::response<http::string_body> response;
      if (!ec) {
        http::read(stream, buffer, response, ec);
      }
      (!ec && response.result() == http::status::ok ? ok : failed)++;
      if (ec) {
        return;
      }
    }
  };
  std::thread first(client);
  std::thread second(client);
  for (int i = 0; i < 20; ++i) {
    proxy.write(i % 2 == 0 ? "routes: [{name: all, cost: 1}]\n" : "routes: [{name: all}]\n");
    EXPECT_EQ(proxy.send(post("/reload"), true).result(), http::status::ok);
  }
  done = true;
  first.join();
  second.join();
  EXPECT_GT(ok.load(), 0);
  EXPECT_EQ(failed.load(), 0);
}

TEST(AccessLog, WritesOneEscapedLinePerRequest) {
  const telemetry::AccessRecord record{.client = "192.0.2.7",
                                       .method = "GET",
                                       .target = "/a\"b\nc",
                                       .route = "api",
                                       .decision = telemetry::MetricDecision::limited,
                                       .status = 429,
                                       .key_hash = 0xabc,
                                       .upstream = {},
                                       .total = std::chrono::microseconds(1500)};
  EXPECT_EQ(telemetry::AccessLog::format(config::LogFormat::text, record),
            "192.0.2.7 \"GET /a\\\"b\\u000ac\" 429 route=api decision=limited "
            "key=0000000000000abc upstream_ms=0.000 duration_ms=1.500");
  EXPECT_EQ(telemetry::AccessLog::format(config::LogFormat::json, record),
            R"("client":"192.0.2.7","method":"GET","target":"/a\"b\u000ac","route":"api",)"
            R"("decision":"limited","status":429,"key":"0000000000000abc","upstream_ms":0.000,)"
            R"("duration_ms":1.500})");
}

}  // namespace
}  // namespace sluice::test
