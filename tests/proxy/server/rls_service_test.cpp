// Envoy's rate-limit service on the decision service's port (SPEC §11), called by a real gRPC
// client (grpcio, with stubs generated from the proxy's own .proto files) as Envoy calls it:
// OK then OVER_LIMIT, each descriptor's status, the RateLimit fields, hits_addend, descriptors
// all or nothing, an envoyproxy/ratelimit file loaded unchanged, and malformed calls refused.
#include <gtest/gtest.h>

#include <boost/json.hpp>
#include <string>

#include "tests/support/proxy_fixture.hpp"
#include "tests/support/redis_server.hpp"
#include "tests/support/shell.hpp"

namespace sluice::test {
namespace {

namespace json = boost::json;

constexpr std::string_view kRls =
    "limiters:\n"
    "  per-ip: {algorithm: fixed_window, limit: 2, window: 1m}\n"
    "  per-user: {algorithm: token_bucket, rate: 10/s, burst: 5}\n"
    "  free-plan: {algorithm: sliding_log, limit: 1, window: 1h}\n"
    "routes: [{name: all}]\n"
    "rls:\n"
    "  - domain: edge\n"
    "    descriptors:\n"
    "      - {key: remote_address, limiter: per-ip}\n"
    "      - {key: plan, value: free, limiter: free-plan}\n"
    "      - {entries: [tenant, user], limiter: per-user}\n";

/// An envoyproxy/ratelimit file in that project's own format, read unchanged.
constexpr std::string_view kEnvoyFile =
    "routes: [{name: all}]\n"
    "rls: [{envoy_config: " SLUICE_SOURCE_DIR "/tests/data/envoy_ratelimit/edge.yaml}]\n";

/// The proxy with the decision service, and rls_grpc.py against it.
class RlsService : public ::testing::Test {
 protected:
  explicit RlsService(std::string_view config = kRls)
      : proxy_(std::string(config), "decide: \"127.0.0.1:0\"\n") {}

  std::string target() {
    return "127.0.0.1:" + std::to_string(proxy_.server().decide_endpoint().port());
  }
  /// `arguments` of `rls_grpc.py call`: each call's JSON.
  json::array call(const std::string& arguments) {
    const std::string out = output_of("/usr/bin/python3 " SLUICE_SOURCE_DIR
                                      "/tests/support/rls_grpc.py call --target " +
                                      target() + " " + arguments + " 2>&1");
    boost::system::error_code ec;
    json::value parsed = json::parse(out, ec);
    if (ec || !parsed.is_object()) {
      ADD_FAILURE() << "rls_grpc.py " << arguments << " printed: " << out;
      return {};
    }
    return parsed.at("calls").as_array();
  }
  /// A body sent as it stands: {"status", "grpc_status", "grpc_message"}.
  json::object raw(const std::string& body_hex) {
    const std::string out =
        output_of("/usr/bin/python3 " SLUICE_SOURCE_DIR "/tests/support/rls_grpc.py raw --target " +
                  target() + " --body-hex '" + body_hex + "' 2>&1");
    boost::system::error_code ec;
    json::value parsed = json::parse(out, ec);
    if (ec || !parsed.is_object()) {
      ADD_FAILURE() << "rls_grpc.py raw printed: " << out;
      return {};
    }
    return parsed.as_object();
  }

  ProxyFixture proxy_;
};

std::string overall(const json::value& call) {
  return std::string(call.at("response").at("overall_code").as_string());
}

TEST_F(RlsService, AnswersOkThenOverLimitWithEachDescriptorsStatus) {
  const json::array calls = call("--domain edge --descriptor remote_address=10.0.0.1 --calls 3");
  ASSERT_EQ(calls.size(), 3u);
  EXPECT_EQ(calls[0].at("code"), "OK");
  EXPECT_EQ(overall(calls[0]), "OK");
  EXPECT_EQ(overall(calls[1]), "OK");
  EXPECT_EQ(overall(calls[2]), "OVER_LIMIT");
  const json::value& first = calls[0].at("response").at("statuses").at(0);
  EXPECT_EQ(first.at("code"), "OK");
  EXPECT_EQ(first.at("current_limit"),
            json::parse(R"({"requests_per_unit":2,"unit":"MINUTE","name":"per-ip"})"));
  EXPECT_EQ(first.at("limit_remaining"), 1);
  const std::int64_t reset = first.at("duration_until_reset").at("seconds").as_int64();
  EXPECT_TRUE(reset >= 0 && reset <= 60) << reset;
  const json::value& refused = calls[2].at("response");
  EXPECT_EQ(refused.at("statuses").at(0).at("code"), "OVER_LIMIT");
  EXPECT_EQ(refused.at("statuses").at(0).at("limit_remaining"), 0);
  // The RateLimit fields the proxy would send, and Retry-After, for Envoy to add.
  const json::array& headers = refused.at("response_headers_to_add").as_array();
  bool retry_after = false, ratelimit = false;
  for (const json::value& header : headers) {
    retry_after = retry_after || header.at(0) == "Retry-After";
    ratelimit = ratelimit || header.at(0) == "RateLimit";
  }
  EXPECT_TRUE(retry_after && ratelimit) << json::serialize(headers);
  EXPECT_EQ(proxy_.upstream().requests(), 0);
}

TEST_F(RlsService, ChargesHitsAddendAndDecidesDescriptorsAllOrNothing) {
  // per-user's bucket holds 5: 4 hits leave 1.
  json::array calls = call("--domain edge --descriptor tenant=acme,user=bob --hits 4");
  EXPECT_EQ(calls.at(0).at("response").at("statuses").at(0).at("limit_remaining"), 1);
  // free-plan admits 1 an hour: the second call is refused whole, and per-ip, which would have
  // admitted it, is not charged for it: of its 2, 1 remains.
  calls = call(
      "--domain edge --descriptor remote_address=10.0.0.9 --descriptor plan=free "
      "--calls 2");
  ASSERT_EQ(calls.size(), 2u);
  EXPECT_EQ(overall(calls[0]), "OK");
  EXPECT_EQ(overall(calls[1]), "OVER_LIMIT");
  const json::array& statuses = calls[1].at("response").at("statuses").as_array();
  EXPECT_EQ(statuses.at(0).at("code"), "OK");
  EXPECT_EQ(statuses.at(0).at("limit_remaining"), 1);
  EXPECT_EQ(statuses.at(1).at("code"), "OVER_LIMIT");
}

TEST_F(RlsService, AnswersOkForAnUnknownDomainAndADescriptorNoRuleNames) {
  json::array calls = call("--domain nowhere --descriptor remote_address=10.0.0.1 --calls 3");
  EXPECT_EQ(overall(calls.at(2)), "OK");
  calls = call("--domain edge --descriptor path=/x");
  EXPECT_EQ(overall(calls.at(0)), "OK");
  EXPECT_EQ(calls.at(0).at("response").at("statuses").at(0).at("current_limit"), nullptr);
  EXPECT_TRUE(admin_shows(proxy_.admin_port(), "/metrics",
                          "sluice_rls_requests_total{result=\"unknown_domain\"} 3"));
}

class RlsFromEnvoyFile : public RlsService {
 protected:
  RlsFromEnvoyFile() : RlsService(kEnvoyFile) {}
};

TEST_F(RlsFromEnvoyFile, ServesItsLimitsWithItsNames) {
  // remote_address: 60 a minute; plan=free then user: 100 an hour (named per_user); the admin
  // user of the free plan is unlimited.
  json::array calls = call(
      "--domain edge --descriptor remote_address=10.0.0.1 "
      "--descriptor plan=free,user=bob --descriptor plan=free,user=admin");
  ASSERT_EQ(calls.size(), 1u);
  const json::array& statuses = calls[0].at("response").at("statuses").as_array();
  EXPECT_EQ(overall(calls[0]), "OK");
  EXPECT_EQ(statuses.at(0).at("current_limit"),
            json::parse(R"({"requests_per_unit":60,"unit":"MINUTE",)"
                        R"("name":"rls:edge.remote_address"})"));
  EXPECT_EQ(statuses.at(0).at("limit_remaining"), 59);
  EXPECT_EQ(statuses.at(1).at("current_limit").at("requests_per_unit"), 100);
  EXPECT_EQ(statuses.at(1).at("current_limit").at("unit"), "HOUR");
  EXPECT_EQ(statuses.at(1).at("limit_remaining"), 99);
  EXPECT_EQ(statuses.at(2).at("code"), "OK");
  EXPECT_EQ(statuses.at(2).at("current_limit"), nullptr);
}

TEST_F(RlsService, RefusesMalformedCallsWithInvalidArgument) {
  // A message that is no protobuf (field 1 announced longer than what follows).
  json::object answer =
      raw("0000000003"
          "0a0561");
  EXPECT_EQ(answer.at("status"), "200");
  EXPECT_EQ(answer.at("grpc_status"), "3");
  // Framing cut short, then a compressed message (no grpc-encoding is accepted).
  EXPECT_EQ(raw("000000").at("grpc_status"), "3");
  EXPECT_EQ(raw("0100000000").at("grpc_status"), "12");
  // The service is still there.
  EXPECT_EQ(overall(call("--domain edge --descriptor remote_address=10.0.0.2").at(0)), "OK");
  EXPECT_TRUE(admin_shows(proxy_.admin_port(), "/metrics",
                          "sluice_rls_requests_total{result=\"invalid\"} 3"));
}

TEST(RlsReplicas, TwoOnOneRedisAnswerOneSharedLimitExactly) {
  const RedisServer redis;
  const std::string shared =
      "decide: \"127.0.0.1:0\"\nstore: {type: redis, redis: {url: \"" + redis.url() + "\"}}\n";
  const std::string config =
      "limiters: {per-ip: {algorithm: sliding_window, limit: 7, window: 1h}}\n"
      "routes: [{name: all}]\n"
      "rls: [{domain: edge, descriptors: [{key: remote_address, limiter: per-ip}]}]\n";
  ProxyFixture first(config, shared);
  ProxyFixture second(config, shared);
  // Five calls to each replica, one after another, for one key: 7 admitted in all, whichever
  // replica a call reached.
  int ok = 0;
  int over = 0;
  for (ProxyFixture* replica : {&first, &second}) {
    const std::string out =
        output_of("/usr/bin/python3 " SLUICE_SOURCE_DIR
                  "/tests/support/rls_grpc.py call --target 127.0.0.1:" +
                  std::to_string(replica->server().decide_endpoint().port()) +
                  " --domain edge --descriptor remote_address=198.51.100.4 --calls 5 2>&1");
    const json::value answers = json::parse(out);
    for (const json::value& one : answers.at("calls").as_array()) {
      const std::string code = overall(one);
      ok += code == "OK" ? 1 : 0;
      over += code == "OVER_LIMIT" ? 1 : 0;
    }
  }
  EXPECT_EQ(ok, 7);
  EXPECT_EQ(over, 3);
}

}  // namespace
}  // namespace sluice::test
