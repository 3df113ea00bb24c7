// GET /config's text: JSON that parses whatever the configuration holds, in the file's order, with
// whole numbers written whole.
#include "proxy/admin/config_json.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <boost/json/parse.hpp>
#include <boost/json/value.hpp>

#include "config/load_config.hpp"

namespace sluice::admin {
namespace {

namespace json = boost::json;
using ::testing::HasSubstr;

config::ProxyConfig parse(const std::string& yaml, const std::string& file = "proxy.yaml") {
  return config::parse_config(yaml, file, [](std::string_view) { return std::nullopt; });
}

json::value parsed(const std::string& text) {
  json::error_code error;
  json::value value = json::parse(text, error);
  EXPECT_FALSE(error) << error.message() << " in " << text;
  return value;
}

TEST(ConfigJson, ParsesWhateverTheNamesAndBodiesHold) {
  // Names are plain (no '"' or '\\'), but may hold any other printable character; YAML's
  // escapes in the free-form values: \L is U+2028, \x01 a control character.
  const config::ProxyConfig config = parse(R"(
limiters:
  "a 'b' <c> & {d}": {algorithm: fixed_window, limit: 3, window: 1h}
routes:
  - name: "r '1' / two"
    match: {path_regex: '^/v[0-9]+\.json$', headers: [{name: X-Q, value: "say \"hi\"\x01\L"}]}
    respond: {status: 200, body: "{\"quoted\": \"yes\"}\n\\back\\slash"}
    limiters: ["a 'b' <c> & {d}"]
)",
                                           "dir \"x\"\\proxy.yaml");
  const std::string text = config_json(config);
  const json::value value = parsed(text);
  EXPECT_EQ(value.at("file").as_string(), "dir \"x\"\\proxy.yaml");
  const json::value& route = value.at("routes").at(0);
  EXPECT_EQ(route.at("name").as_string(), "r '1' / two");
  EXPECT_EQ(route.at("match").at("path_regex").as_string(), "^/v[0-9]+\\.json$");
  EXPECT_EQ(route.at("match").at("headers").at(0).at("value").as_string(),
            "say \"hi\"\x01\xE2\x80\xA8");
  EXPECT_EQ(route.at("respond").at("body").as_string(), "{\"quoted\": \"yes\"}\n\\back\\slash");
  EXPECT_EQ(route.at("limiters").at(0).as_string(), "a 'b' <c> & {d}");
  EXPECT_EQ(value.at("limiters").at("a 'b' <c> & {d}").at("limit").as_int64(), 3);
}

TEST(ConfigJson, ShowsTheRedisStoreWithItsPasswordRedactedAndWhetherItIsACluster) {
  const config::ProxyConfig config = parse(
      "upstream: http://127.0.0.1:9000\n"
      "store: {type: redis, redis: {url: \"redis://:hunter2@node-1:7000\", cluster: true}}\n"
      "routes: [{name: a}]\n");
  const json::value value = parsed(config_json(config));
  const json::value& redis = value.at("store").at("redis");
  EXPECT_EQ(redis.at("url").as_string(), "redis://:***@node-1:7000");
  EXPECT_TRUE(redis.at("cluster").as_bool());
}

TEST(ConfigJson, ShowsTheDecisionServiceAndItsRlsDomains) {
  const config::ProxyConfig config = parse(
      "decide: \"127.0.0.1:8081\"\n"
      "limiters: {per-ip: {algorithm: fixed_window, limit: 3, window: 1m}}\n"
      "routes: [{name: a}]\n"
      "rls: [{domain: edge, descriptors: [{key: remote_address, limiter: per-ip}, "
      "{entries: [plan=gold], unlimited: true}]}]\n");
  const json::value value = parsed(config_json(config));
  EXPECT_EQ(value.at("decide").at("address").as_string(), "127.0.0.1:8081");
  EXPECT_EQ(value.at("rls"), parsed(R"([{"domain":"edge","descriptors":[)"
                                    R"({"entries":[{"key":"remote_address"}],"limiter":"per-ip"},)"
                                    R"({"entries":[{"key":"plan","value":"gold"}],)"
                                    R"("unlimited":true}]}])"));
  EXPECT_FALSE(parsed(config_json(parse("upstream: http://127.0.0.1:9\nroutes: [{name: a}]\n")))
                   .as_object()
                   .contains("decide"));
}

TEST(ConfigJson, ShowsALeasedLimitersOvershootBoundForTheLeaseHoldersCounted) {
  const config::ProxyConfig config = parse(
      "upstream: http://127.0.0.1:9000\nstore: {type: redis}\n"
      "limiters: {leased: {algorithm: token_bucket, rate: 100/s, lease: 10}}\n"
      "routes: [{name: a, limiters: [leased]}]\n");
  const json::value value = parsed(config_json(config, 4));
  const json::value& limiter = value.at("limiters").at("leased");
  EXPECT_EQ(limiter.at("lease").as_int64(), 10);
  EXPECT_EQ(limiter.at("overshoot_bound").at("permits").as_int64(), 40);
  EXPECT_EQ(limiter.at("overshoot_bound").at("lease_holders").as_int64(), 4);
}

TEST(ConfigJson, WritesMembersInTheFilesOrderAndWholeNumbersWhole) {
  const config::ProxyConfig config = parse(R"(
limiters:
  bucket: {algorithm: token_bucket, rate: 10/s, burst: 20}
  warm: {algorithm: token_bucket, rate: 10/s, warmup: 1m, cold_factor: 2.5}
routes: [{name: all, limiters: [bucket, warm], respond: {status: 204}}]
)");
  const std::string text = config_json(config);
  EXPECT_THAT(text, HasSubstr(R"("bucket":{"algorithm":"token_bucket","rate":"10/s","burst":20,)"
                              R"("mode":"reject","key":"ip","shadow":false,"status":429,)"
                              R"("overrides":[]})"));
  EXPECT_THAT(text, HasSubstr(R"("routes":[{"name":"all","match":{},"limiters":["bucket","warm"],)"
                              R"("cost":1,"respond":{"status":204,"body":""}}])"));
  EXPECT_THAT(text, ::testing::StartsWith(
                        R"({"file":"proxy.yaml","listen":[{"address":"0.0.0.0:8080"}],)"));
  EXPECT_THAT(text, ::testing::EndsWith("}\n"));
  EXPECT_EQ(parsed(text).at("limiters").at("warm").at("cold_factor").as_double(), 2.5);
}

}  // namespace
}  // namespace sluice::admin
