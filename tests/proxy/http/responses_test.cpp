// The answers the proxy gives itself, byte for byte: 429 with the violated policies, 403, 404,
// a route's own response, and the RateLimit / X-RateLimit fields in each limits_headers mode.
// Decisions come from a real pipeline on a manual clock.
#include "proxy/http/responses.hpp"

#include <gtest/gtest.h>

#include <string>

#include "tests/support/manual_clock.hpp"
#include "tests/support/pipeline_fixture.hpp"

namespace sluice::http {
namespace {

using namespace std::chrono_literals;
using config::LimitsHeaders;
using Request = test::PipelineFixture::Request;
using test::at;

const std::string kConfig = R"(
upstream: http://127.0.0.1:9000
deny: ["203.0.113.0/24"]
limiters:
  per-ip: {algorithm: fixed_window, limit: 2, window: 1m}
  bucket: {algorithm: token_bucket, rate: 10/s, burst: 20, key: "header:X-Api-Key"}
  audit: {algorithm: fixed_window, limit: 1, window: 1m, shadow: true}
routes:
  - {name: status, match: {path: /status}, respond: {status: 200, body: "ok\n"}}
  - {name: all, match: {path_prefix: /api/}, limiters: [per-ip, bucket, audit]}
)";

const Request kKeyed{.target = "/api/x", .headers = {{"X-Api-Key", "k"}}};

std::string head_of(const OwnResponse& response) {
  return {response.head.data(), response.head.size()};
}

std::string limit_fields(const pipeline::Decision& decision, LimitsHeaders headers) {
  HeadText head;
  write_limit_headers(head, decision, headers);
  return {head.data(), head.size()};
}

TEST(OwnResponse, AnswersALimitedRequestWithItsViolatedPoliciesAndLimits) {
  test::PipelineFixture fixture(kConfig);
  fixture.send(kKeyed, at(0s));
  fixture.send(kKeyed, at(10s));
  const pipeline::Decision limited = fixture.send(kKeyed, at(10s));
  ASSERT_EQ(limited.outcome, pipeline::Outcome::limited);
  OwnResponse out;
  own_response(out, limited, 11, true, LimitsHeaders::both);
  const std::string body =
      R"({"type":"https://iana.org/assignments/http-problem-types#quota-exceeded",)"
      R"("title":"Too Many Requests","status":429,"violated-policies":["per-ip"]})";
  EXPECT_EQ(out.body, body);
  // per-ip: none left until the minute ends in 50 s. bucket: 19 of 20 (it was full again by
  // 10 s, and the refused request took nothing), full in 100 ms. The shadow limiter: in no field.
  EXPECT_EQ(head_of(out),
            "HTTP/1.1 429 Too Many Requests\r\n"
            "Server: sluice\r\n"
            "Content-Type: application/problem+json\r\n"
            "Content-Length: " +
                std::to_string(body.size()) +
                "\r\n"
                "Retry-After: 50\r\n"
                "RateLimit-Policy: \"per-ip\";q=2;w=60, \"bucket\";q=20;w=2\r\n"
                "RateLimit: \"per-ip\";r=0;t=50, \"bucket\";r=19;t=1\r\n"
                "X-RateLimit-Limit: 2\r\n"
                "X-RateLimit-Remaining: 0\r\n"
                "X-RateLimit-Reset: 50\r\n"
                "\r\n");
  EXPECT_TRUE(out.keep_alive);
}

TEST(OwnResponse, WritesOnlyTheFieldsItsModeNames) {
  test::PipelineFixture fixture(kConfig);
  const pipeline::Decision allowed = fixture.send(kKeyed, at(0s));
  ASSERT_EQ(allowed.outcome, pipeline::Outcome::allowed);
  EXPECT_EQ(limit_fields(allowed, LimitsHeaders::draft),
            "RateLimit-Policy: \"per-ip\";q=2;w=60, \"bucket\";q=20;w=2\r\n"
            "RateLimit: \"per-ip\";r=1;t=60, \"bucket\";r=19;t=1\r\n");
  // The tightest limiter: the fewest left.
  EXPECT_EQ(limit_fields(allowed, LimitsHeaders::legacy),
            "X-RateLimit-Limit: 2\r\nX-RateLimit-Remaining: 1\r\nX-RateLimit-Reset: 60\r\n");
  EXPECT_EQ(limit_fields(allowed, LimitsHeaders::none), "");
  EXPECT_TRUE(writes_limit_headers(allowed, LimitsHeaders::draft));
  EXPECT_FALSE(writes_limit_headers(allowed, LimitsHeaders::none));

  EXPECT_TRUE(is_limit_field("ratelimit-policy", LimitsHeaders::draft));
  EXPECT_FALSE(is_limit_field("RateLimit", LimitsHeaders::legacy));
  EXPECT_TRUE(is_limit_field("x-ratelimit-reset", LimitsHeaders::legacy));
  EXPECT_FALSE(is_limit_field("X-RateLimit-Reset", LimitsHeaders::draft));
  EXPECT_TRUE(is_limit_field("X-RateLimit-Limit", LimitsHeaders::both));
  EXPECT_FALSE(is_limit_field("RateLimit", LimitsHeaders::none));
  EXPECT_FALSE(is_limit_field("X-RateLimit", LimitsHeaders::both));
}

TEST(OwnResponse, GivesNoLimitFieldsWhenOnlyShadowLimitersApplied) {
  test::PipelineFixture fixture(R"(
upstream: http://127.0.0.1:9000
limiters:
  audit: {algorithm: fixed_window, limit: 1, window: 1m, shadow: true}
routes: [{name: all, limiters: [audit]}]
)");
  const pipeline::Decision decision = fixture.send({}, at(0s));
  ASSERT_EQ(decision.applied().size(), 1U);
  EXPECT_FALSE(writes_limit_headers(decision, LimitsHeaders::both));
  EXPECT_EQ(limit_fields(decision, LimitsHeaders::both), "");
}

TEST(OwnResponse, StatesEachAlgorithmsQuota) {
  test::PipelineFixture fixture(R"(
upstream: http://127.0.0.1:9000
limiters:
  log: {algorithm: sliding_log, limit: 100, window: 1500ms}
  default-burst: {algorithm: token_bucket, rate: 30/m}
  warm: {algorithm: token_bucket, rate: 2/s, warmup: 4s}
  leaky: {algorithm: leaky_bucket, rate: 5/s, burst: 4}
  inflight: {algorithm: concurrency, limit: 3}
routes: [{name: all, limiters: [log, default-burst, warm, leaky, inflight]}]
)");
  const pipeline::Decision decision = fixture.send({}, at(0s));
  ASSERT_EQ(decision.outcome, pipeline::Outcome::allowed);
  const std::string fields = limit_fields(decision, LimitsHeaders::draft);
  // A window's limit over its length in whole seconds, rounded up; a bucket's burst over the
  // time it takes to refill it; a warming bucket's rate per second; concurrency: no window.
  EXPECT_EQ(fields.substr(0, fields.find("\r\n")),
            "RateLimit-Policy: \"log\";q=100;w=2, \"default-burst\";q=1;w=2, \"warm\";q=2;w=1, "
            "\"leaky\";q=5;w=1, \"inflight\";q=3");
  pipeline::Pipeline::release_locally(decision);
}

TEST(OwnResponse, Answers403AndGivesABannedClientItsWait) {
  test::PipelineFixture fixture(kConfig + "ban: {after: 1, within: 1m, for: 10m}\n");
  const pipeline::Decision denied = fixture.send({.peer = "203.0.113.5"}, at(0s));
  ASSERT_EQ(denied.outcome, pipeline::Outcome::denied);
  OwnResponse out;
  own_response(out, denied, 11, false, LimitsHeaders::both);
  EXPECT_EQ(out.body, R"({"type":"about:blank","title":"Forbidden","status":403})");
  EXPECT_EQ(head_of(out),
            "HTTP/1.1 403 Forbidden\r\nServer: sluice\r\nContent-Type: application/problem+json\r\n"
            "Content-Length: 55\r\nConnection: close\r\n\r\n");  // no Retry-After: it never ends

  fixture.send(kKeyed, at(0s));
  fixture.send(kKeyed, at(0s));
  fixture.send(kKeyed, at(0s));  // limited: the strike that bans
  const pipeline::Decision banned = fixture.send(kKeyed, at(1s));
  ASSERT_TRUE(banned.banned);
  own_response(out, banned, 11, true, LimitsHeaders::both);
  EXPECT_EQ(out.body, R"({"type":"about:blank","title":"Forbidden","status":403})");
  EXPECT_EQ(head_of(out),
            "HTTP/1.1 403 Forbidden\r\nServer: sluice\r\nContent-Type: application/problem+json\r\n"
            "Content-Length: 55\r\nRetry-After: 599\r\n\r\n");
}

TEST(OwnResponse, Answers404AndARoutesOwnResponseInTheClientsVersion) {
  test::PipelineFixture fixture(kConfig);
  const pipeline::Decision missing = fixture.send({.target = "/nowhere"}, at(0s));
  OwnResponse out;
  own_response(out, missing, 11, true, LimitsHeaders::both);
  EXPECT_EQ(out.body, R"({"type":"about:blank","title":"Not Found","status":404})");
  EXPECT_EQ(head_of(out),
            "HTTP/1.1 404 Not Found\r\nServer: sluice\r\nContent-Type: application/problem+json\r\n"
            "Content-Length: 55\r\n\r\n");

  const pipeline::Decision status = fixture.send({.target = "/status"}, at(0s));
  own_response(out, status, 10, true, LimitsHeaders::both);
  EXPECT_EQ(out.body, "ok\n");
  EXPECT_EQ(head_of(out),
            "HTTP/1.0 200 OK\r\nServer: sluice\r\nContent-Type: text/plain; charset=utf-8\r\n"
            "Content-Length: 3\r\nConnection: keep-alive\r\n\r\n");
  EXPECT_EQ(out.buffers()[0].size(), out.head.size());
  EXPECT_EQ(out.buffers()[1].size(), 3U);
}

TEST(ProblemResponse, AnswersTransportProblemsWithTheStandardReason) {
  OwnResponse out;
  problem_response(out, http::status::bad_gateway, 11, false);
  EXPECT_EQ(out.body, R"({"type":"about:blank","title":"Bad Gateway","status":502})");
  EXPECT_EQ(
      head_of(out),
      "HTTP/1.1 502 Bad Gateway\r\nServer: sluice\r\nContent-Type: application/problem+json\r\n"
      "Content-Length: 57\r\nConnection: close\r\n\r\n");
  EXPECT_FALSE(out.keep_alive);
}

}  // namespace
}  // namespace sluice::http
