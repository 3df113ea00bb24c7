// Routes that verify their callers (SPEC §8): tokens PyJWT minted, verified against a JWKS file,
// limits keyed on the verified claims, the refusals and the per-thread token cache, with exact
// outcomes at given times.
#include "proxy/pipeline/identity.hpp"

#include <gtest/gtest.h>

#include <boost/json/serialize.hpp>
#include <deque>

#include "tests/support/manual_clock.hpp"
#include "tests/support/minted_jwts.hpp"
#include "tests/support/pipeline_fixture.hpp"
#include "tests/support/temp_directory.hpp"

namespace sluice::pipeline {
namespace {

using namespace std::chrono_literals;
using Request = test::PipelineFixture::Request;

constexpr std::int64_t kMintedAt = 1'800'000'000;  // tokens valid [kMintedAt-10, kMintedAt+3600)

const test::MintedJwts& tokens() {
  static const test::MintedJwts all = test::mint_jwts(kMintedAt);
  return all;
}

limiter::TimePoint seconds_after_minting(std::int64_t seconds) {
  return limiter::TimePoint(std::chrono::seconds(kMintedAt + seconds));
}

const std::string& token_of(const std::string& name) {
  return name.starts_with("ES") || name.starts_with("RS") ? tokens().by_algorithm.at(name).token
                                                          : tokens().cases.at(name).second;
}

/// The Authorization values the requests' header views point into: they live as long as the test.
std::deque<std::string>& token_storage() {
  static std::deque<std::string> storage;
  return storage;
}

Request bearing(const std::string& token, std::string target = "/api/x") {
  Request request{.target = std::move(target)};
  request.headers.push_back({"Authorization", token_storage().emplace_back("Bearer " + token)});
  return request;
}

/// A JWKS file with the minted ES256 and RS256 public keys, and a config that verifies with it.
class IdentityTest : public ::testing::Test {
 protected:
  static std::string config_text(const std::string& jwks) {
    return R"(
upstream: http://127.0.0.1:9000
auth:
  jwt:
    idp:
      issuer: "https://idp.test/"
      audiences: [api]
      jwks: {file: ")" +
           jwks + R"("}
      algorithms: [ES256, RS256]
      leeway: 30s
limiters:
  per-user: {algorithm: fixed_window, limit: 2, window: 1h, key: "jwt:sub"}
  per-org: {algorithm: fixed_window, limit: 100, window: 1h, key: "jwt:org.id+jwt:sub"}
  per-plan:
    algorithm: fixed_window
    limit: 1
    window: 1h
    key: "jwt:sub"
    tier: "jwt:plan"
    tiers: {pro: {limit: 3}, enterprise: {limit: 100}}
  monthly:
    algorithm: fixed_window
    limit: 2
    calendar: month
    key: "jwt:sub"
    tier: "jwt:plan"
    tiers: {pro: {limit: 4}}
routes:
  - {name: api, match: {path_prefix: /api/}, auth: {jwt: idp}, limiters: [per-user, per-org]}
  - {name: quota, match: {path_prefix: /quota/}, auth: {jwt: idp}, limiters: [monthly]}
  - {name: plans, match: {path_prefix: /plans/}, auth: {jwt: idp}, limiters: [per-plan]}
  - {name: open, match: {path_prefix: /open/}, auth: {jwt: idp, required: false}, limiters: [per-user]}
)";
  }

  void SetUp() override {
    ASSERT_FALSE(tokens().by_algorithm.empty()) << "the minting script ran";
    const std::string jwks = R"({"keys":[)" +
                             boost::json::serialize(tokens().by_algorithm.at("ES256").jwk) + "," +
                             boost::json::serialize(tokens().by_algorithm.at("RS256").jwk) + "]}";
    fixture_ = std::make_unique<test::PipelineFixture>(
        config_text(directory_.write("jwks.json", jwks).string()));
  }

  test::TempDirectory directory_{"sluice-identity"};
  std::unique_ptr<test::PipelineFixture> fixture_;
};

TEST_F(IdentityTest, LimitsTheVerifiedCallerNotTheTokenItSends) {
  // alice in an ES256 token, in another ES256 token, and in an RS256 token: one caller, one count.
  const Decision first = fixture_->send(bearing(token_of("ES256")), seconds_after_minting(0));
  EXPECT_EQ(first.outcome, Outcome::allowed);
  EXPECT_TRUE(first.auth.token);
  EXPECT_EQ(first.auth.check, auth::JwtCheck::verified);
  ASSERT_EQ(first.applied().size(), 2U);
  EXPECT_EQ(first.applied()[0].status.remaining, 1U);
  EXPECT_EQ(fixture_->send(bearing(token_of("alice_again")), seconds_after_minting(1)).outcome,
            Outcome::allowed);
  const Decision third = fixture_->send(bearing(token_of("RS256")), seconds_after_minting(2));
  EXPECT_EQ(third.outcome, Outcome::limited);
  EXPECT_EQ(third.status, 429U);
  // bob has a count of his own.
  EXPECT_EQ(fixture_->send(bearing(token_of("bob")), seconds_after_minting(3)).outcome,
            Outcome::allowed);
  // The composite key is the claims' values joined: the org's and the user's.
  EXPECT_EQ(fixture_->pipeline().peek("per-org", "acme+alice", seconds_after_minting(3))->remaining,
            98U);
  EXPECT_EQ(fixture_->pipeline().peek("per-org", "globex+bob", seconds_after_minting(3))->remaining,
            99U);
  EXPECT_EQ(fixture_->pipeline().peek("per-user", "alice", seconds_after_minting(3))->remaining,
            0U);
}

TEST_F(IdentityTest, RefusesAMissingOrInvalidTokenWith401NamingTheCheck) {
  const auto refused = [&](const Request& request, std::int64_t at) {
    const Decision decision = fixture_->send(request, seconds_after_minting(at));
    EXPECT_EQ(decision.outcome, Outcome::unauthorized);
    EXPECT_EQ(decision.status, 401U);
    EXPECT_EQ(decision.report_count, 0U);  // no limiter was charged
    return decision.auth;
  };
  EXPECT_FALSE(refused(Request{.target = "/api/x"}, 0).token);
  EXPECT_EQ(refused(bearing(token_of("expired")), 0).check, auth::JwtCheck::expired);
  EXPECT_EQ(refused(bearing(token_of("not_yet_valid")), 0).check, auth::JwtCheck::not_yet_valid);
  EXPECT_EQ(refused(bearing(token_of("issuer")), 0).check, auth::JwtCheck::issuer);
  EXPECT_EQ(refused(bearing(token_of("audience")), 0).check, auth::JwtCheck::audience);
  EXPECT_EQ(refused(bearing(token_of("none")), 0).check, auth::JwtCheck::algorithm);
  EXPECT_EQ(refused(bearing(token_of("key_confusion")), 0).check, auth::JwtCheck::algorithm);
  EXPECT_EQ(refused(bearing(token_of("jku")), 0).check, auth::JwtCheck::header);
  EXPECT_EQ(refused(bearing("not.a.token"), 0).check, auth::JwtCheck::malformed);
  std::string tampered = token_of("ES256");
  tampered[tampered.size() - 5] = tampered[tampered.size() - 5] == 'A' ? 'B' : 'A';
  EXPECT_EQ(refused(bearing(tampered), 0).check, auth::JwtCheck::signature);
  // Valid from 10 s before minting, with 30 s of leeway; until an hour after, with 30 s more.
  EXPECT_EQ(fixture_->send(bearing(token_of("ES256")), seconds_after_minting(-40)).outcome,
            Outcome::allowed);
  EXPECT_EQ(refused(bearing(token_of("ES256")), -41).check, auth::JwtCheck::not_yet_valid);
  EXPECT_EQ(refused(bearing(token_of("ES256")), 3630).check, auth::JwtCheck::expired);
}

TEST_F(IdentityTest, AnOptionalRouteLetsAnonymousRequestsThroughWithoutClaimLimiters) {
  const Decision anonymous = fixture_->send({.target = "/open/x"}, seconds_after_minting(0));
  EXPECT_EQ(anonymous.outcome, Outcome::allowed);
  EXPECT_EQ(anonymous.report_count, 0U);  // per-user could not form its key
  // A token that fails is refused even there: a caller who sends one means to be someone.
  EXPECT_EQ(
      fixture_->send(bearing(token_of("expired"), "/open/x"), seconds_after_minting(0)).outcome,
      Outcome::unauthorized);
  EXPECT_EQ(fixture_->send(bearing(token_of("bob"), "/open/x"), seconds_after_minting(0))
                .applied()
                .size(),
            1U);
}

TEST_F(IdentityTest, ARepeatedTokenIsALookupUntilItExpires) {
  const Request request = bearing(token_of("bob"));
  EXPECT_FALSE(fixture_->send(request, seconds_after_minting(0)).auth.cached);
  const Decision again = fixture_->send(request, seconds_after_minting(100));
  EXPECT_TRUE(again.auth.cached);
  EXPECT_EQ(again.auth.check, auth::JwtCheck::verified);
  ASSERT_NE(again.auth.identity, nullptr);
  // Past exp and its leeway the remembered verdict does not hold: the token is checked again.
  const Decision late = fixture_->send(request, seconds_after_minting(3630));
  EXPECT_FALSE(late.auth.cached);
  EXPECT_EQ(late.auth.check, auth::JwtCheck::expired);
  // A reload builds new providers: their verdicts start afresh.
  test::PipelineFixture reloaded(config_text((directory_.path() / "jwks.json").string()));
  EXPECT_FALSE(reloaded.send(request, seconds_after_minting(0)).auth.cached);
}

TEST_F(IdentityTest, APlanClaimChoosesTheLimitersParameters) {
  // alice's plan is pro (3 an hour), bob's is free, which tiers does not list (the limit's 1).
  for (int i = 0; i < 3; ++i) {
    const Decision admitted =
        fixture_->send(bearing(token_of("ES256"), "/plans/x"), seconds_after_minting(i));
    EXPECT_EQ(admitted.outcome, Outcome::allowed) << i;
    EXPECT_EQ(admitted.applied()[0].status.remaining, static_cast<std::uint64_t>(2 - i));
  }
  EXPECT_EQ(
      fixture_->send(bearing(token_of("ES256"), "/plans/x"), seconds_after_minting(3)).outcome,
      Outcome::limited);
  EXPECT_EQ(fixture_->send(bearing(token_of("bob"), "/plans/x"), seconds_after_minting(3)).outcome,
            Outcome::allowed);
  EXPECT_EQ(fixture_->send(bearing(token_of("bob"), "/plans/x"), seconds_after_minting(4)).outcome,
            Outcome::limited);
}

TEST_F(IdentityTest, APlansMonthlyQuotaResetsOnTheFirst) {
  // Minted at 2027-01-15T08:00:00Z; the month ends 16 days and 16 hours later (UTC).
  constexpr std::int64_t kToFebruary = (16 * 24 + 16) * 3600;
  // Tokens are valid for an hour from minting: February comes with fresh ones in life; here the
  // quota's window is read at minting time and its reset counted to the 1st.
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ(
        fixture_->send(bearing(token_of("ES256"), "/quota/x"), seconds_after_minting(i)).outcome,
        Outcome::allowed);
  }
  const Decision spent =
      fixture_->send(bearing(token_of("ES256"), "/quota/x"), seconds_after_minting(4));
  EXPECT_EQ(spent.outcome, Outcome::limited);
  EXPECT_EQ(spent.retry_after, std::chrono::seconds(kToFebruary - 4));
  ASSERT_EQ(spent.applied().size(), 1U);
  EXPECT_EQ(spent.applied()[0].options->limit, 4U);  // reported with the tier's parameters
  EXPECT_EQ(spent.applied()[0].status.reset, std::chrono::seconds(kToFebruary - 4));
}

TEST(Identity, NamesTheKeyFileItCannotUse) {
  test::TempDirectory directory("sluice-identity");
  const std::string pem = directory.write("not-a-key.pem", "hello\n").string();
  const std::string jwks = directory.write("empty.json", R"({"keys":[]})").string();
  const config::ProxyConfig config = config::parse_config(R"(
upstream: http://127.0.0.1:9000
auth:
  jwt:
    a: {issuer: i, keys: [{file: ")" + pem + R"(", alg: ES256}]}
    b: {issuer: i, jwks: {file: ")" + jwks + R"("}, algorithms: [RS256]}
    c: {issuer: i, keys: [{secret: short, alg: HS256}]}
routes: [{name: r}]
)",
                                                          "proxy.yaml");
  try {
    const Identity identity(config, nullptr);
    FAIL() << "built";
  } catch (const config::ConfigError& error) {
    const std::vector<std::string> lines = error.lines();
    ASSERT_EQ(lines.size(), 3U);
    EXPECT_EQ(lines[0], "proxy.yaml:5:27: auth.jwt.a.keys[0]: " + pem +
                            ": not a public key in PEM (-----BEGIN PUBLIC KEY-----)");
    EXPECT_EQ(lines[1], "proxy.yaml:6:26: auth.jwt.b.jwks.file: " + jwks +
                            ": no key in the set verifies signatures");
    EXPECT_EQ(
        lines[2],
        "proxy.yaml:7:27: auth.jwt.c.keys[0]: a secret for HS256 must have at least 32 bytes");
  }
}

}  // namespace
}  // namespace sluice::pipeline
