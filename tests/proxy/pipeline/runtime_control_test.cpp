// Runtime overrides and bans (SPEC §10) as the pipeline obeys them, with a manual clock: one
// key's parameters for a while, bans, resets, and a reload that keeps them.
#include "proxy/pipeline/runtime_control.hpp"

#include <gtest/gtest.h>

#include <memory>

#include "tests/support/ip_literal.hpp"
#include "tests/support/manual_clock.hpp"
#include "tests/support/pipeline_fixture.hpp"

namespace sluice::pipeline {
namespace {

using namespace std::chrono_literals;
using test::at;
using test::ip;

const std::string kTwoPerHour =
    "upstream: http://127.0.0.1:9000\nlimiters:\n  per-user: {algorithm: fixed_window, limit: 2, "
    "window: 1h, key: "
    "\"header:X-User\"}\n"
    "routes: [{name: all, limiters: [per-user]}]\n";

/// A request of `user` (its X-User header); refers to `user`.
test::PipelineFixture::Request from_user(std::string_view user) {
  return {.headers = {{"X-User", user}}};
}

/// How many of `n` requests of `user` at `now` are allowed.
int allowed_of(test::PipelineFixture& fixture, std::string_view user, int n,
               limiter::TimePoint now) {
  int allowed = 0;
  for (int i = 0; i < n; ++i) {
    allowed += fixture.send(from_user(user), now).outcome == Outcome::allowed ? 1 : 0;
  }
  return allowed;
}

class RuntimeControlTest : public ::testing::Test {
 protected:
  RuntimeControlTest() { fixture.pipeline().use(control); }

  test::PipelineFixture fixture{kTwoPerHour};
  std::shared_ptr<RuntimeControl> control = std::make_shared<RuntimeControl>();
};

TEST_F(RuntimeControlTest, AnOverrideCountsOneKeyWithItsParametersUntilItExpires) {
  control->set_override({.limiter = "per-user",
                         .key = "vip",
                         .parameters = R"({"limit": 5})",
                         .expires_at = at(10min)},
                        fixture.config(), at(0s));
  control->set_override({.limiter = "per-user",
                         .key = "noisy",
                         .parameters = R"({"limit": 1})",
                         .expires_at = at(10min)},
                        fixture.config(), at(0s));
  EXPECT_TRUE(control->any());

  EXPECT_EQ(allowed_of(fixture, "vip", 7, at(1s)), 5);
  EXPECT_EQ(allowed_of(fixture, "noisy", 3, at(1s)), 1);
  EXPECT_EQ(allowed_of(fixture, "plain", 3, at(1s)), 2);
  const Decision decision = fixture.send(from_user("vip"), at(2s));
  EXPECT_EQ(decision.reports[0].options->limit, 5U);  // the RateLimit headers say 5
  EXPECT_EQ(fixture.pipeline().peek("per-user", "vip", at(2s))->remaining, 0U);

  // Expired, the key counts with the limiter's own parameters again (a fresh count).
  EXPECT_EQ(allowed_of(fixture, "noisy", 3, at(10min)), 2);
  EXPECT_EQ(control->overrides(at(10min)).size(), 0U);
}

TEST_F(RuntimeControlTest, ReplacingOrRemovingAnOverride) {
  control->set_override(
      {.limiter = "per-user", .key = "vip", .parameters = R"({"limit": 5})", .expires_at = at(1h)},
      fixture.config(), at(0s));
  EXPECT_EQ(allowed_of(fixture, "vip", 3, at(1s)), 3);
  // The same parameters again (as a shared store's next read says): the count is kept.
  control->set_override(
      {.limiter = "per-user", .key = "vip", .parameters = R"({"limit": 5})", .expires_at = at(2h)},
      fixture.config(), at(2s));
  EXPECT_EQ(allowed_of(fixture, "vip", 3, at(3s)), 2);

  EXPECT_TRUE(control->remove_override("per-user", "vip", fixture.config(), at(4s)));
  EXPECT_FALSE(control->remove_override("per-user", "vip", fixture.config(), at(4s)));
  EXPECT_FALSE(control->any());
  EXPECT_EQ(allowed_of(fixture, "vip", 3, at(5s)), 2);
}

TEST_F(RuntimeControlTest, ABanDeniesTheClientUntilItEndsOrIsLifted) {
  control->set_ban({.ip = ip("198.51.100.7"), .expires_at = at(10min)}, fixture.config(), at(0s));
  const Decision banned = fixture.send(from_user("a"), at(1min));
  EXPECT_EQ(banned.outcome, Outcome::denied);
  EXPECT_EQ(banned.status, 403U);
  EXPECT_TRUE(banned.banned);
  EXPECT_EQ(banned.retry_after, 9min);
  EXPECT_EQ(fixture.pipeline().banned_for(ip("198.51.100.7"), at(1min)), 9min);
  test::PipelineFixture::Request other = from_user("a");
  other.peer = "198.51.100.8";
  EXPECT_EQ(fixture.send(other, at(1min)).outcome, Outcome::allowed);

  EXPECT_EQ(fixture.send(from_user("a"), at(10min)).outcome, Outcome::allowed);  // it ended

  control->set_ban({.ip = ip("198.51.100.7"), .expires_at = at(1h)}, fixture.config(), at(11min));
  EXPECT_EQ(fixture.send(from_user("a"), at(11min)).outcome, Outcome::denied);
  EXPECT_TRUE(control->remove_ban(ip("198.51.100.7"), fixture.config(), at(12min)));
  EXPECT_EQ(fixture.send(from_user("b"), at(12min)).outcome, Outcome::allowed);
}

TEST_F(RuntimeControlTest, ForgetGivesOneKeyAFullBudget) {
  control->set_override(
      {.limiter = "per-user", .key = "vip", .parameters = R"({"limit": 3})", .expires_at = at(1h)},
      fixture.config(), at(0s));
  EXPECT_EQ(allowed_of(fixture, "a", 3, at(1s)), 2);
  EXPECT_EQ(allowed_of(fixture, "b", 3, at(1s)), 2);
  EXPECT_EQ(allowed_of(fixture, "vip", 4, at(1s)), 3);

  const auto definitions = fixture.pipeline().forget("per-user", "a", at(2s));
  ASSERT_TRUE(definitions.has_value());
  EXPECT_EQ(definitions->size(), 1U);
  EXPECT_EQ(fixture.pipeline().forget("per-user", "vip", at(2s))->size(), 2U);  // its override's
  EXPECT_FALSE(fixture.pipeline().forget("nobody", "a", at(2s)).has_value());

  EXPECT_EQ(allowed_of(fixture, "a", 3, at(3s)), 2);
  EXPECT_EQ(allowed_of(fixture, "b", 3, at(3s)), 0);
  EXPECT_EQ(allowed_of(fixture, "vip", 4, at(3s)), 3);
}

TEST_F(RuntimeControlTest, AReloadedPipelineObeysTheSameAndKeepsTheCounts) {
  control->set_override(
      {.limiter = "per-user", .key = "vip", .parameters = R"({"limit": 4})", .expires_at = at(1h)},
      fixture.config(), at(0s));
  EXPECT_EQ(allowed_of(fixture, "vip", 3, at(1s)), 3);

  // The same definition: the count goes on in the new pipeline.
  Pipeline reloaded(fixture.config(), &fixture.pipeline());
  EXPECT_EQ(reloaded.control(), control);
  const test::PipelineFixture::Request vip = from_user("vip");
  const RequestView view = test::PipelineFixture::view_of(vip);
  EXPECT_EQ(reloaded.decide(view, at(1s)).outcome, Outcome::allowed);
  EXPECT_EQ(reloaded.decide(view, at(1s)).outcome, Outcome::limited);

  // A limiter whose parameters changed: the override is laid over the new ones once refreshed.
  auto changed = std::make_unique<config::ProxyConfig>(
      config::parse_config("upstream: http://127.0.0.1:9000\nlimiters:\n  per-user: {algorithm: "
                           "fixed_window, limit: 2, window: 2h, key: "
                           "\"header:X-User\"}\nroutes: [{name: all, limiters: [per-user]}]\n",
                           "proxy.yaml", [](std::string_view) { return std::nullopt; }));
  Pipeline next(*changed, &reloaded);
  control->refresh(*changed, at(2s), true);
  int allowed = 0;
  for (int i = 0; i < 6; ++i) {
    allowed += next.decide(view, at(2s)).outcome == Outcome::allowed ? 1 : 0;
  }
  EXPECT_EQ(allowed, 4);  // a new definition counts afresh, with the override's limit
}

TEST_F(RuntimeControlTest, AnOverrideWhoseParametersNoLongerApplyIsSetAside) {
  control->set_override(
      {.limiter = "per-user", .key = "vip", .parameters = R"({"limit": 4})", .expires_at = at(1h)},
      fixture.config(), at(0s));
  // The limiter became a token bucket: `limit` means nothing to it.
  auto changed = std::make_unique<config::ProxyConfig>(
      config::parse_config("upstream: http://127.0.0.1:9000\nlimiters:\n  per-user: {algorithm: "
                           "token_bucket, rate: 1/h, burst: 2, key: "
                           "\"header:X-User\"}\nroutes: [{name: all, limiters: [per-user]}]\n",
                           "proxy.yaml", [](std::string_view) { return std::nullopt; }));
  Pipeline next(*changed, &fixture.pipeline());
  control->refresh(*changed, at(1s), true);
  const test::PipelineFixture::Request vip = from_user("vip");
  const RequestView view = test::PipelineFixture::view_of(vip);
  int allowed = 0;
  for (int i = 0; i < 4; ++i) {
    allowed += next.decide(view, at(2s)).outcome == Outcome::allowed ? 1 : 0;
  }
  EXPECT_EQ(allowed, 2);
  EXPECT_EQ(control->overrides(at(2s)).size(), 1U);  // still listed, until it expires
}

TEST(RuntimeControlOptions, LaysTheParametersOverTheLimitersOwnOrNamesWhatIsWrong) {
  const test::PipelineFixture fixture(kTwoPerHour);
  const config::LimiterConfig& limiter = *fixture.config().limiter_named("per-user");
  std::vector<std::string> problems;
  const auto options = RuntimeControl::options_for(
      {.limiter = "per-user", .key = "k", .parameters = R"({"limit":9,"window":"30s"})"}, limiter,
      problems);
  ASSERT_TRUE(options.has_value());
  EXPECT_EQ(options->limit, 9U);
  EXPECT_EQ(options->window, 30s);
  EXPECT_EQ(options->algorithm, limiter::AlgorithmKind::fixed_window);
  EXPECT_FALSE(RuntimeControl::options_for(
      {.limiter = "per-user", .key = "k", .parameters = R"({"burst":9})"}, limiter, problems));
  ASSERT_EQ(problems.size(), 1U);
  EXPECT_NE(problems[0].find("burst"), std::string::npos) << problems[0];
}

}  // namespace
}  // namespace sluice::pipeline
