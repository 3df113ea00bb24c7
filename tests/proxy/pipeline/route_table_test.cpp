#include "proxy/pipeline/route_table.hpp"

#include <gtest/gtest.h>

#include "tests/support/manual_clock.hpp"
#include "tests/support/pipeline_fixture.hpp"

namespace sluice::pipeline {
namespace {

using Request = test::PipelineFixture::Request;

test::PipelineFixture routes() {
  return test::PipelineFixture(R"(
upstream: http://127.0.0.1:9000
routes:
  - {name: login, match: {path: /login, methods: [POST]}}
  - {name: gold, match: {path_prefix: /api/, headers: [{name: X-Tier, value: gold}]}}
  - {name: keyless, match: {path_prefix: /api/, headers: [{name: X-Api-Key, present: false}]}}
  - {name: versioned, match: {path_regex: "^/v[0-9]+/"}}
  - {name: admin, match: {path_prefix: /, host: admin.example.com}}
  - {name: api, match: {path_prefix: /api/}}
)");
}

std::string route_of(test::PipelineFixture& fixture, const Request& request) {
  const Decision decision = fixture.send(request, test::at(std::chrono::seconds(0)));
  return decision.route != nullptr ? decision.route->name : "404";
}

TEST(RouteTable, FirstMatchWins) {
  auto fixture = routes();
  EXPECT_EQ(route_of(fixture, {.method = "POST", .target = "/login"}), "login");
  EXPECT_EQ(route_of(fixture, {.method = "GET", .target = "/login"}), "404");
  EXPECT_EQ(route_of(fixture, {.method = "POST", .target = "/login/x"}), "404");
  EXPECT_EQ(route_of(fixture, {.target = "/api/x", .headers = {{"X-Tier", "gold"}}}), "gold");
  EXPECT_EQ(route_of(fixture, {.target = "/api/x", .headers = {{"x-tier", "gold"}}}), "gold");
  EXPECT_EQ(route_of(fixture, {.target = "/api/x", .headers = {{"X-Tier", "silver"}}}), "keyless");
  EXPECT_EQ(route_of(fixture, {.target = "/api/x", .headers = {{"X-Api-Key", "k"}}}), "api");
  EXPECT_EQ(route_of(fixture, {.target = "/v2/things?x=1"}), "versioned");
  EXPECT_EQ(route_of(fixture, {.target = "/version/2"}), "404");
  EXPECT_EQ(route_of(fixture, {.target = "/status", .host = "ADMIN.example.com:8443"}), "admin");
  EXPECT_EQ(route_of(fixture, {.target = "/status"}), "404");
}

TEST(RouteTable, MatchesThePathWithoutTheQuery) {
  auto fixture = routes();
  EXPECT_EQ(route_of(fixture, {.method = "POST", .target = "/login?next=/home"}), "login");
}

}  // namespace
}  // namespace sluice::pipeline
