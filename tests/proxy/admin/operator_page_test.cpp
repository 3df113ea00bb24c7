// The operators' page and its JSON over real sockets: GET / with the numbers of now as tables
// (readable without JavaScript), every text escaped, its files compiled in under a strict
// policy, and /stats with the traffic history the timer samples.
#include "proxy/admin/operator_page.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <boost/json/parse.hpp>
#include <boost/json/value.hpp>
#include <chrono>
#include <string>
#include <thread>

#include "tests/support/redis_server.hpp"
#include "tests/support/reloadable_proxy.hpp"

namespace sluice::test {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

const std::string kMarkupRoute =
    "limiters:\n  per-ip: {algorithm: fixed_window, limit: 2, window: 1h}\n"
    "routes: [{name: \"<script>window.pwned=1</script>\", limiters: [per-ip]}]\n";

boost::json::value stats_of(ReloadableProxy& proxy, const std::string& target = "/stats") {
  const auto response = proxy.send(get(target), true);
  EXPECT_EQ(response.result(), http::status::ok);
  EXPECT_EQ(response[http::field::content_type], "application/json");
  return boost::json::parse(response.body());
}

TEST(OperatorPage, ShowsTheNumbersOfNowAsPlainTables) {
  ReloadableProxy proxy(kMarkupRoute);
  for (int i = 0; i < 3; ++i) {
    proxy.send(get("/"));
  }
  proxy.metrics_once("decision=\"limited\"} 1\n");
  const auto page = proxy.send(get("/"), true);
  ASSERT_EQ(page.result(), http::status::ok);
  EXPECT_EQ(page[http::field::content_type], "text/html; charset=utf-8");
  EXPECT_EQ(page["Content-Security-Policy"], admin::kPagePolicy);
  EXPECT_EQ(page["X-Content-Type-Options"], "nosniff");
  const std::string& html = page.body();
  EXPECT_THAT(html, HasSubstr("<script src=\"/page.js\" defer></script>"));
  EXPECT_THAT(html, HasSubstr("<link rel=\"stylesheet\" href=\"/page.css\">"));
  EXPECT_THAT(html, Not(HasSubstr("<!--sluice:sections-->")));
  // The route's row: its name as text, 2 allowed, 0 delayed, 1 limited.
  EXPECT_THAT(html, HasSubstr("<td>&lt;script&gt;window.pwned=1&lt;/script&gt;</td><td>"));
  EXPECT_THAT(html, HasSubstr("</td><td>2</td><td>0</td><td>1</td>"));
  EXPECT_THAT(html, HasSubstr("<td>per-ip</td><td>fixed_window</td><td>1</td>"));
  EXPECT_THAT(html, HasSubstr("<td>name</td><td>memory</td>"));
  EXPECT_THAT(html, HasSubstr("<td>last reload</td><td>none since the start</td>"));
  // The one script element is the page's own: the route's name never becomes one.
  EXPECT_EQ(html.find("<script>"), std::string::npos);
  EXPECT_THAT(html, HasSubstr("&lt;script&gt;window.pwned=1&lt;/script&gt;"));  // in /config too
}

TEST(OperatorPage, ShowsTheLastReloadsErrorsAsText) {
  ReloadableProxy proxy(kMarkupRoute);
  proxy.write("routes: [{name: all, limiters: [\"<img src=x onerror=go()>\"]}]\n");
  EXPECT_EQ(proxy.send(post("/reload"), true).result(), http::status::unprocessable_entity);
  const std::string html = proxy.send(get("/"), true).body();
  EXPECT_THAT(html, HasSubstr("<td>last reload</td><td>failure, POST /reload, "));
  EXPECT_THAT(html, HasSubstr("&lt;img src=x onerror=go()&gt;"));
  EXPECT_THAT(html, Not(HasSubstr("<img")));
  const boost::json::value stats = stats_of(proxy);
  EXPECT_EQ(stats.at("last_reload").at("ok").as_bool(), false);
  EXPECT_EQ(stats.at("last_reload").at("trigger").as_string(), "POST /reload");
  EXPECT_THAT(std::string(stats.at("last_reload").at("errors").at(0).as_string()),
              HasSubstr("<img src=x onerror=go()>"));
  EXPECT_EQ(stats.at("reloads").at("failed").as_int64(), 1);
}

TEST(OperatorPage, ServesItsFilesFromTheBinaryUnderThePolicy) {
  ReloadableProxy proxy(kMarkupRoute);
  const auto script = proxy.send(get("/page.js"), true);
  ASSERT_EQ(script.result(), http::status::ok);
  EXPECT_EQ(script[http::field::content_type], "text/javascript; charset=utf-8");
  EXPECT_EQ(script["Content-Security-Policy"], admin::kPagePolicy);
  EXPECT_EQ(script["X-Content-Type-Options"], "nosniff");
  EXPECT_THAT(script.body(), HasSubstr("'use strict';"));
  EXPECT_THAT(script.body(), Not(HasSubstr("innerHTML")));  // text goes in as text only
  const auto style = proxy.send(get("/page.css"), true);
  ASSERT_EQ(style.result(), http::status::ok);
  EXPECT_EQ(style[http::field::content_type], "text/css; charset=utf-8");
  EXPECT_THAT(style.body(), HasSubstr(".scroll { overflow-x: auto; }"));
  // Nothing that loads from elsewhere: no other origin in the page or its files.
  for (const std::string& body : {proxy.send(get("/"), true).body(), script.body(), style.body()}) {
    EXPECT_THAT(body, Not(HasSubstr("https://")));
    EXPECT_THAT(body, Not(HasSubstr("@import")));
  }
  EXPECT_EQ(proxy.send(get("/page.html"), true).result(), http::status::not_found);
  EXPECT_EQ(proxy.send(post("/"), true).result(), http::status::method_not_allowed);
}

TEST(OperatorPage, ShowsTheRedisNodeAndItsBreaker) {
  const RedisServer redis;
  ReloadableProxy proxy("store: {type: redis, redis: {url: \"" + redis.url() +
                        "\", timeout: 20ms, on_error: deny}}\n" + kMarkupRoute);
  EXPECT_EQ(proxy.send(get("/")).result(), http::status::ok);
  const std::string address = "127.0.0.1:" + std::to_string(redis.port());
  boost::json::value stats = stats_of(proxy);
  EXPECT_EQ(stats.at("store").at("name").as_string(), "redis");
  EXPECT_EQ(stats.at("store").at("calls").as_int64(), 1);
  const auto& node = stats.at("store").at("nodes").at(0);
  EXPECT_EQ(node.at("address").as_string(), address);
  EXPECT_EQ(node.at("breaker").as_string(), "closed");
  EXPECT_TRUE(node.at("serving").as_bool());
  EXPECT_THAT(proxy.send(get("/"), true).body(),
              HasSubstr("<td>node " + address + "</td><td>breaker closed</td>"));

  redis.pause();  // a hung Redis: the request fails closed, the breaker opens
  EXPECT_EQ(proxy.send(get("/")).result(), http::status::service_unavailable);
  stats = stats_of(proxy);
  EXPECT_FALSE(stats.at("store").at("available").as_bool());
  EXPECT_EQ(stats.at("store").at("nodes").at(0).at("breaker").as_string(), "open");
  EXPECT_THAT(proxy.send(get("/"), true).body(),
              HasSubstr("<td>node " + address + "</td><td>breaker open</td>"));
  redis.resume();
}

TEST(OperatorPage, StatsCarryTheHistoryTheTimerSamples) {
  ReloadableProxy proxy(kMarkupRoute);
  // The sampler's first tick takes the baseline; requests after it show as a second's rate.
  std::uint64_t start = 0;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while ((start = stats_of(proxy).at("history").at("newest").to_number<std::uint64_t>()) < 1 &&
         std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  ASSERT_GE(start, 1U);
  for (int i = 0; i < 5; ++i) {
    proxy.send(get("/"));
  }
  // Within a few ticks: 2 allowed and 3 limited, each in the second it came.
  std::uint64_t allowed = 0;
  std::uint64_t limited = 0;
  boost::json::value stats;
  while (std::chrono::steady_clock::now() < deadline + std::chrono::seconds(3) &&
         (allowed < 2 || limited < 3)) {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    stats = stats_of(proxy, "/stats?since=" + std::to_string(start));
    allowed = limited = 0;
    for (const auto& route : stats.at("history").at("routes").as_array()) {
      const auto& rates = route.at("per_second").as_object();
      for (const auto& [decision, seconds] : rates) {
        for (const auto& rate : seconds.as_array()) {
          (decision == "allowed" ? allowed : limited) += rate.to_number<std::uint64_t>();
        }
      }
    }
  }
  EXPECT_EQ(allowed, 2U);
  EXPECT_EQ(limited, 3U);
  const auto& history = stats.at("history");
  EXPECT_EQ(history.at("seconds").to_number<std::uint64_t>(),
            history.at("newest").to_number<std::uint64_t>() - start);
  const auto& routes = stats.at("routes").as_array();
  const auto route = std::find_if(routes.begin(), routes.end(), [](const auto& shown) {
    return shown.at("route").as_string() == "<script>window.pwned=1</script>";
  });
  ASSERT_NE(route, routes.end());
  EXPECT_EQ(route->at("total").at("allowed").as_int64(), 2);
  EXPECT_EQ(route->at("total").at("limited").as_int64(), 3);
  EXPECT_EQ(stats.at("limiters").at(0).at("limiter").as_string(), "per-ip");
  EXPECT_EQ(stats.at("store").at("name").as_string(), "memory");
  EXPECT_EQ(stats.at("access_log_dropped").as_int64(), 0);
  EXPECT_TRUE(stats.at("last_reload").is_null());
  EXPECT_EQ(proxy.send(get("/stats?since=soon"), true).result(), http::status::bad_request);
}

}  // namespace
}  // namespace sluice::test
