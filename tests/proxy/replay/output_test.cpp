// `sluice replay`'s output lines are JSON whatever the configuration names, and times read back
// as the input wrote them.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <boost/json/parse.hpp>
#include <boost/json/value.hpp>
#include <sstream>
#include <vector>

#include "config/load_config.hpp"
#include "proxy/replay/replayer.hpp"
#include "tests/support/minted_jwts.hpp"
#include "tests/support/temp_directory.hpp"

namespace sluice::replay {
namespace {

namespace json = boost::json;

std::vector<json::value> parsed_lines(const std::string& output) {
  std::vector<json::value> lines;
  std::istringstream in(output);
  for (std::string line; std::getline(in, line);) {
    json::error_code error;
    lines.push_back(json::parse(line, error));
    EXPECT_FALSE(error) << error.message() << " in " << line;
  }
  return lines;
}

TEST(ReplayOutput, IsJsonWhateverTheNames) {
  // Names are plain (no '"' or '\\'), but may hold any other printable character.
  const config::ProxyConfig config = config::parse_config(
      R"(
limiters:
  "per 'ip' <&>": {algorithm: fixed_window, limit: 2, window: 1m}
  "shadow {x} /": {algorithm: fixed_window, limit: 1, window: 1m, shadow: true}
routes:
  - name: "a 'route' / with space"
    respond: {status: 200}
    limiters: ["per 'ip' <&>", "shadow {x} /"]
)",
      "proxy.yaml", [](std::string_view) { return std::nullopt; });
  const std::string live = "per 'ip' <&>";
  const std::string shadow = "shadow {x} /";
  Replayer replayer(config, InputFormat::jsonl);
  std::string out;
  for (int i = 0; i < 3; ++i) {
    replayer.feed(R"({"t": 10, "ip": "192.0.2.1"})", out);
  }
  const std::vector<json::value> lines = parsed_lines(out);
  ASSERT_EQ(lines.size(), 3U) << out;
  for (const json::value& line : lines) {
    EXPECT_EQ(line.at("route").as_string(), "a 'route' / with space");
    EXPECT_EQ(line.at("limiters").at(0).as_string(), live);
  }
  EXPECT_EQ(lines[1].at("shadow_limited").at(0).as_string(), shadow);  // the shadow refuses
  EXPECT_EQ(lines[2].at("violated").at(0).as_string(), live);          // then the live one
}

TEST(ReplayOutput, VerifiesTokensAtTheRecordsTime) {
  constexpr std::int64_t kMinted = 1'800'000'000;  // tokens valid [kMinted-10, kMinted+3600)
  const test::MintedJwts minted = test::mint_jwts(kMinted);
  ASSERT_FALSE(minted.by_algorithm.empty()) << "the minting script ran";
  const test::TempDirectory directory("sluice-replay-jwt");
  const std::string pem =
      directory.write("idp.pem", minted.by_algorithm.at("ES256").public_pem).string();
  const config::ProxyConfig config = config::parse_config(
      R"(
auth: {jwt: {idp: {issuer: "https://idp.test/", leeway: 0s, keys: [{file: ")" +
          pem + R"(", alg: ES256}]}}}
limiters:
  per-user: {algorithm: fixed_window, limit: 1, window: 1h, key: "jwt:sub"}
routes: [{name: api, auth: {jwt: idp}, respond: {status: 200}, limiters: [per-user]}]
)",
      "proxy.yaml", [](std::string_view) { return std::nullopt; });
  Replayer replayer(config, InputFormat::jsonl);
  std::string out;
  const std::string headers =
      R"(, "headers": {"Authorization": "Bearer )" + minted.by_algorithm.at("ES256").token + "\"}}";
  replayer.feed(R"({"t": )" + std::to_string(kMinted - 11) + headers, out);  // before nbf
  replayer.feed(R"({"t": )" + std::to_string(kMinted) + headers, out);
  replayer.feed(R"({"t": )" + std::to_string(kMinted + 1) + headers, out);
  replayer.feed(R"({"t": )" + std::to_string(kMinted + 3600) + headers, out);  // at exp
  replayer.feed(R"({"t": )" + std::to_string(kMinted + 3600) + "}", out);      // no token
  const std::vector<json::value> lines = parsed_lines(out);
  ASSERT_EQ(lines.size(), 5U) << out;
  const auto decision = [&](std::size_t i) {
    return std::string(lines[i].at("decision").as_string()) + " " +
           std::to_string(lines[i].at("status").as_int64());
  };
  EXPECT_EQ(decision(0), "unauthorized 401");
  EXPECT_EQ(decision(1), "allowed 200");
  EXPECT_EQ(decision(2), "limited 429");  // one an hour for alice
  EXPECT_EQ(decision(3), "unauthorized 401");
  EXPECT_EQ(decision(4), "unauthorized 401");
  std::ostringstream summary;
  replayer.summary().print(summary);
  EXPECT_THAT(summary.str(), ::testing::HasSubstr("shadow    unauth.\n"));
  EXPECT_THAT(summary.str(), ::testing::HasSubstr("per-user alice"));  // claims shown as they are
}

TEST(ReplayOutput, ChargesWhatEachResponseCostWhenItEnds) {
  // A token budget of 100 a minute over an LLM gateway's log: each call's tokens are charged
  // when its response ends (t + duration), so a call that starts before the one before it ends
  // still gets in (the overshoot that a budget charged after the response allows).
  const config::ProxyConfig config = config::parse_config(
      R"(
upstream: "http://127.0.0.1:9"
limiters:
  tokens: {algorithm: token_bucket, rate: 100/m, burst: 100, cost: response}
  failed-logins: {algorithm: fixed_window, limit: 1, window: 1h, count_if: {status: [401]}}
routes:
  - {name: chat, match: {path: /v1/chat}, limiters: [tokens], cost_from: {usage: openai}}
  - {name: login, match: {path: /login}, limiters: [failed-logins]}
)",
      "proxy.yaml", [](std::string_view) { return std::nullopt; });
  Replayer replayer(config, InputFormat::jsonl);
  std::string out;
  replayer.feed(R"({"t": 0, "path": "/v1/chat", "duration": 2, "response_cost": 90})", out);
  replayer.feed(R"({"t": 1, "path": "/v1/chat", "duration": 2, "response_cost": 90})", out);
  // 100 − 90 at t=2, + 1 2/3 − 90 at t=3: −78 1/3 tokens, back at 0 at t=50.
  replayer.feed(R"({"t": 3, "path": "/v1/chat", "response_cost": 1})", out);
  replayer.feed(R"({"t": 50, "path": "/v1/chat", "response_cost": 1})", out);
  replayer.feed(R"({"t": 50.6, "path": "/v1/chat", "response_cost": 1})", out);
  replayer.feed(R"({"t": 100, "path": "/login", "status": 200})", out);
  replayer.feed(R"({"t": 101, "path": "/login", "status": 401})", out);
  replayer.feed(R"({"t": 102, "path": "/login", "status": 401})", out);
  const std::vector<json::value> lines = parsed_lines(out);
  ASSERT_EQ(lines.size(), 8U) << out;
  std::vector<std::string> decisions;
  for (const json::value& line : lines) {
    decisions.emplace_back(line.at("decision").as_string());
  }
  EXPECT_EQ(decisions, (std::vector<std::string>{"allowed", "allowed", "limited", "limited",
                                                 "allowed", "allowed", "allowed", "limited"}));
}

TEST(ReplayOutput, SaysRetryAfterAsTheProxysHeaderWould) {
  const config::ProxyConfig config = config::parse_config(
      R"(
limiters:
  per-ip: {algorithm: fixed_window, limit: 2, window: 1m}
routes:
  - name: all
    respond: {status: 200}
    limiters: [per-ip]
)",
      "proxy.yaml", [](std::string_view) { return std::nullopt; });
  Replayer replayer(config, InputFormat::jsonl);
  std::string out;
  replayer.feed(R"({"t": 0.5, "ip": "192.0.2.1"})", out);             // admitted: no header
  replayer.feed(R"({"t": 0.5, "ip": "192.0.2.1", "cost": 2})", out);  // 59.5 s to wait
  replayer.feed(R"({"t": 0.5, "ip": "192.0.2.1", "cost": 3})", out);  // never: the header says 1
  const std::vector<json::value> lines = parsed_lines(out);
  ASSERT_EQ(lines.size(), 3U) << out;
  EXPECT_EQ(lines[0].at("retry_after").as_int64(), 0);
  EXPECT_EQ(lines[1].at("decision").as_string(), "limited");
  EXPECT_EQ(lines[1].at("retry_after").as_int64(), 60);
  EXPECT_EQ(lines[2].at("decision").as_string(), "limited");
  EXPECT_EQ(lines[2].at("retry_after").as_int64(), 1);
}

TEST(ReplayOutput, WritesTimesAsTheInputDid) {
  const config::ProxyConfig config =
      config::parse_config("routes: [{name: all, respond: {status: 200}}]\n", "proxy.yaml",
                           [](std::string_view) { return std::nullopt; });
  Replayer replayer(config, InputFormat::jsonl);
  std::string out;
  // Nanoseconds: 19 digits, more than a double holds exactly, so only a correctly rounded
  // reading gives back the shortest text of the nearest double.
  replayer.feed(R"({"t": 1700006409.900931384})", out);
  replayer.feed(R"({"t": 1700065563.738923776})", out);
  replayer.feed(R"({"t": 1.7e9})", out);
  EXPECT_THAT(out, ::testing::HasSubstr(R"("t":1700006409.9009314,)"));
  EXPECT_THAT(out, ::testing::HasSubstr(R"("t":1700065563.7389238,)"));
  EXPECT_THAT(out, ::testing::HasSubstr(R"("t":1700000000,)"));
  EXPECT_EQ(parsed_lines(out).size(), 3U);
}

}  // namespace
}  // namespace sluice::replay
