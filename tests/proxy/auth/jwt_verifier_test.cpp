// Tokens minted by someone else (PyJWT with python3-cryptography, fresh keys for every
// algorithm) verified by sluice's verifier, every tampered byte refused, the refusals RFC 8725
// asks for, and RFC 7515's own example: exact outcomes.
#include "proxy/auth/jwt_verifier.hpp"

#include <gtest/gtest.h>

#include <array>
#include <boost/json/parse.hpp>
#include <cstdio>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "proxy/auth/base64url.hpp"
#include "tests/support/minted_jwts.hpp"

namespace sluice::auth {
namespace {

constexpr std::int64_t kNow = 1'800'000'000;

using Minted = test::MintedJwts;

const Minted& minted() {
  static const Minted all = test::mint_jwts(kNow);
  return all;
}

constexpr std::array<std::string_view, 13> kAlgorithms = {
    "RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256",
    "ES384", "ES512", "EdDSA", "HS256", "HS384", "HS512"};

JwtRules rules_for(std::string_view algorithm) {
  return JwtRules{.algorithms = {*algorithm_named(algorithm)},
                  .issuer = "https://idp.test/",
                  .audiences = {"api"},
                  .leeway = std::chrono::seconds(0)};
}

/// The key for `algorithm` as configured from PEM or a secret.
VerificationKey configured_key(std::string_view algorithm) {
  const Minted::Signed& signed_with = minted().by_algorithm.at(std::string(algorithm));
  const JwsAlgorithm named = *algorithm_named(algorithm);
  std::string error;
  std::optional<VerificationKey> key =
      signed_with.secret.empty() ? VerificationKey::from_pem(signed_with.public_pem, named, error)
                                 : VerificationKey::from_secret(signed_with.secret, named, error);
  EXPECT_TRUE(key) << algorithm << ": " << error;
  return std::move(*key);
}

JwtCheck verify(std::string_view token, const VerificationKey& key, const JwtRules& rules) {
  VerifiedJwt verified;
  return verify_jwt(token, std::span(&key, 1), rules, kNow, verified);
}

TEST(JwtVerifier, AcceptsTokensPyJwtMintedForEveryAlgorithmFromPemSecretOrJwk) {
  ASSERT_EQ(minted().by_algorithm.size(), kAlgorithms.size()) << "the minting script ran";
  for (const std::string_view algorithm : kAlgorithms) {
    const Minted::Signed& signed_with = minted().by_algorithm.at(std::string(algorithm));
    const VerificationKey key = configured_key(algorithm);
    VerifiedJwt verified;
    EXPECT_EQ(
        verify_jwt(signed_with.token, std::span(&key, 1), rules_for(algorithm), kNow, verified),
        JwtCheck::verified)
        << algorithm;
    EXPECT_EQ(verified.claims.at("sub").as_string(), "alice") << algorithm;
    EXPECT_EQ(verified.claims.at("org").as_object().at("id").as_string(), "acme") << algorithm;
    EXPECT_EQ(verified.expires, kNow + 3600) << algorithm;

    std::string error;
    const std::optional<VerificationKey> from_jwk =
        VerificationKey::from_jwk(signed_with.jwk, error);
    ASSERT_TRUE(from_jwk) << algorithm << ": " << error;
    EXPECT_EQ(from_jwk->kid(), signed_with.kid);
    EXPECT_EQ(verify(signed_with.token, *from_jwk, rules_for(algorithm)), JwtCheck::verified)
        << algorithm << " with its JWK";
  }
}

TEST(JwtVerifier, RefusesEveryTamperedCharacter) {
  for (const std::string_view algorithm : kAlgorithms) {
    const std::string& token = minted().by_algorithm.at(std::string(algorithm)).token;
    const VerificationKey key = configured_key(algorithm);
    const JwtRules rules = rules_for(algorithm);
    for (std::size_t at = 0; at < token.size(); ++at) {
      if (token[at] == '.') {
        continue;
      }
      std::string tampered = token;
      tampered[at] = tampered[at] == 'A' ? 'B' : 'A';
      EXPECT_NE(verify(tampered, key, rules), JwtCheck::verified)
          << algorithm << ", character " << at;
    }
  }
}

TEST(JwtVerifier, NamesTheCheckEachBadTokenFails) {
  const std::map<std::string, JwtCheck> expected = {
      {"expired", JwtCheck::expired},     {"not_yet_valid", JwtCheck::not_yet_valid},
      {"no_exp", JwtCheck::expired},      {"issuer", JwtCheck::issuer},
      {"audience", JwtCheck::audience},   {"crit", JwtCheck::header},
      {"jku", JwtCheck::header},          {"embedded_jwk", JwtCheck::header},
      {"none", JwtCheck::algorithm},      {"key_confusion", JwtCheck::algorithm},
      {"ecdsa_der", JwtCheck::signature}, {"ecdsa_zero", JwtCheck::signature},
  };
  for (const auto& [name, check] : expected) {
    const auto& [key_algorithm, token] = minted().cases.at(name);
    EXPECT_EQ(verify(token, configured_key(key_algorithm), rules_for(key_algorithm)), check)
        << name;
  }
  {
    // A key from a JWKS answers only to its own `kid`.
    const auto& [key_algorithm, token] = minted().cases.at("unknown_kid");
    std::string error;
    const std::optional<VerificationKey> with_kid =
        VerificationKey::from_jwk(minted().by_algorithm.at(key_algorithm).jwk, error);
    ASSERT_TRUE(with_kid) << error;
    EXPECT_EQ(verify(token, *with_kid, rules_for(key_algorithm)), JwtCheck::unknown_key);
    EXPECT_EQ(verify(token, configured_key(key_algorithm), rules_for(key_algorithm)),
              JwtCheck::verified)
        << "a key configured without a kid answers to any";
  }
  const auto& [key_algorithm, token] = minted().cases.at("audience_array");
  EXPECT_EQ(verify(token, configured_key(key_algorithm), rules_for(key_algorithm)),
            JwtCheck::verified)
      << "an `aud` array that holds the audience";
}

TEST(JwtVerifier, AnRsaKeyNeverVerifiesAnHmacTokenEvenWhenHs256IsAccepted) {
  const auto& [key_algorithm, token] = minted().cases.at("key_confusion");
  JwtRules both = rules_for("RS256");
  both.algorithms.push_back(JwsAlgorithm::hs256);
  EXPECT_EQ(verify(token, configured_key(key_algorithm), both), JwtCheck::unknown_key);
}

TEST(JwtVerifier, LeewayStretchesExpAndNbf) {
  JwtRules lenient = rules_for("ES256");
  lenient.leeway = std::chrono::seconds(300);
  for (const char* name : {"expired", "not_yet_valid"}) {
    const auto& [key_algorithm, token] = minted().cases.at(name);
    EXPECT_EQ(verify(token, configured_key(key_algorithm), lenient), JwtCheck::verified) << name;
  }
}

TEST(JwtVerifier, RefusesMalformedTokensBeforeAnySignatureCheck) {
  const VerificationKey key = configured_key("HS256");
  const JwtRules rules = rules_for("HS256");
  const std::string& good = minted().by_algorithm.at("HS256").token;
  for (const std::string& bad :
       std::vector<std::string>{"", ".", "..", "a.b", "a.b.c.d.e", good + ".", "." + good,
                                good + "=", std::string(kMaxTokenBytes + 1, 'a'),
                                encode_base64url("[]") + "." + encode_base64url("{}") + ".AAAA",
                                encode_base64url("{\"alg\":\"HS256\"") + ".e30.AAAA"}) {
    EXPECT_EQ(verify(bad, key, rules), JwtCheck::malformed) << bad.substr(0, 40);
  }
  // Nesting past any real header: refused, not parsed.
  const std::string deep = encode_base64url("{\"alg\":\"HS256\",\"x\":" + std::string(64, '[') +
                                            std::string(64, ']') + "}");
  EXPECT_EQ(verify(deep + ".e30.AAAA", key, rules), JwtCheck::malformed);
}

TEST(JwtVerifier, VerifiesRfc7515sHs256Example) {
  // RFC 7515 Appendix A.1: the key and token as printed there; exp is 1300819380.
  std::string secret;
  ASSERT_TRUE(decode_base64url(
      "AyM1SysPpbyDfgZld3umj1qzKObwVMkoqQ-EstJQLr_T-1qS0gZH75aKtMN3Yj0iPS4hcgUuTwjAzZr1Z9CAow",
      secret));
  std::string error;
  const std::optional<VerificationKey> key =
      VerificationKey::from_secret(secret, JwsAlgorithm::hs256, error);
  ASSERT_TRUE(key) << error;
  const std::string token =
      "eyJ0eXAiOiJKV1QiLA0KICJhbGciOiJIUzI1NiJ9."
      "eyJpc3MiOiJqb2UiLA0KICJleHAiOjEzMDA4MTkzODAsDQogImh0dHA6Ly9leGFtcGxlLmNvbS9pc19yb290Ijp0cnVl"
      "fQ."
      "dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk";
  const JwtRules rules{.algorithms = {JwsAlgorithm::hs256}, .issuer = "joe", .audiences = {}};
  VerifiedJwt verified;
  EXPECT_EQ(verify_jwt(token, std::span(&*key, 1), rules, 1'300'819'379, verified),
            JwtCheck::verified);
  EXPECT_TRUE(verified.claims.at("http://example.com/is_root").as_bool());
  EXPECT_EQ(verify_jwt(token, std::span(&*key, 1), rules, 1'300'819'380, verified),
            JwtCheck::expired)
      << "exp is the first second it is no longer valid";
}

}  // namespace
}  // namespace sluice::auth
