// Keys from JWKs and PEM: each kind read, and every key that must not verify refused with why.
#include "proxy/auth/verification_key.hpp"

#include <gtest/gtest.h>

#include <boost/json/parse.hpp>
#include <string>
#include <vector>

#include "proxy/auth/base64url.hpp"

namespace sluice::auth {
namespace {

std::optional<VerificationKey> jwk(std::string_view json, std::string& error) {
  return VerificationKey::from_jwk(boost::json::parse(json).as_object(), error);
}

// RFC 7515 Appendix A.3's P-256 key (public part) and RFC 8037 Appendix A.2's Ed25519 key.
constexpr std::string_view kP256 =
    R"({"kty":"EC","crv":"P-256","x":"f83OJ3D2xF1Bg8vub9tLe1gHMzV76e8Tus9uPHvRVEU",)"
    R"("y":"x_FEzRu9m36HLN_tue659LNpXW6pCyStikYjKIWI5a0","kid":"p256"})";
constexpr std::string_view kEd25519 =
    R"({"kty":"OKP","crv":"Ed25519","x":"11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo"})";

TEST(VerificationKey, ReadsEcAndEd25519Jwks) {
  std::string error;
  const std::optional<VerificationKey> p256 = jwk(kP256, error);
  ASSERT_TRUE(p256) << error;
  EXPECT_EQ(p256->kind(), KeyKind::ec_p256);
  EXPECT_EQ(p256->kid(), "p256");
  EXPECT_TRUE(p256->serves(JwsAlgorithm::es256));
  EXPECT_FALSE(p256->serves(JwsAlgorithm::es384));
  EXPECT_FALSE(p256->serves(JwsAlgorithm::hs256));
  const std::optional<VerificationKey> ed = jwk(kEd25519, error);
  ASSERT_TRUE(ed) << error;
  EXPECT_TRUE(ed->serves(JwsAlgorithm::eddsa));
}

TEST(VerificationKey, AJwksAlgIsTheOnlyAlgorithmItServes) {
  std::string error;
  const std::optional<VerificationKey> secret = jwk(
      R"({"kty":"oct","alg":"HS384","k":"AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8gISIjJCUmJygpKissLS4v"})",
      error);
  ASSERT_TRUE(secret) << error;
  EXPECT_TRUE(secret->serves(JwsAlgorithm::hs384));
  EXPECT_FALSE(secret->serves(JwsAlgorithm::hs256));
}

TEST(VerificationKey, RefusesKeysThatMustNotVerify) {
  const std::string_view refused[] = {
      // a point off the curve (y changed)
      R"({"kty":"EC","crv":"P-256","x":"f83OJ3D2xF1Bg8vub9tLe1gHMzV76e8Tus9uPHvRVEU","y":"x_FEzRu9m36HLN_tue659LNpXW6pCyStikYjKIWI5a1"})",
      // a coordinate longer than the curve's size
      R"({"kty":"EC","crv":"P-256","x":"f83OJ3D2xF1Bg8vub9tLe1gHMzV76e8Tus9uPHvRVEUA","y":"x_FEzRu9m36HLN_tue659LNpXW6pCyStikYjKIWI5a0"})",
      R"({"kty":"EC","crv":"secp256k1","x":"AA","y":"AA"})",
      R"({"kty":"OKP","crv":"X25519","x":"11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo"})",
      R"({"kty":"oct","k":"c2hvcnQ"})",  // a secret shorter than SHA-256
      R"({"kty":"EC","crv":"P-256","use":"enc","x":"f83OJ3D2xF1Bg8vub9tLe1gHMzV76e8Tus9uPHvRVEU","y":"x_FEzRu9m36HLN_tue659LNpXW6pCyStikYjKIWI5a0"})",
      R"({"kty":"EC","crv":"P-256","alg":"RS256","x":"f83OJ3D2xF1Bg8vub9tLe1gHMzV76e8Tus9uPHvRVEU","y":"x_FEzRu9m36HLN_tue659LNpXW6pCyStikYjKIWI5a0"})",
      R"({"kty":"EC","crv":"P-256","alg":"none","x":"f83OJ3D2xF1Bg8vub9tLe1gHMzV76e8Tus9uPHvRVEU","y":"x_FEzRu9m36HLN_tue659LNpXW6pCyStikYjKIWI5a0"})",
      R"({"kty":"RSA"})",
      R"({"kty":"unknown"})",
  };
  // an RSA key of 512 bits
  const std::string small_rsa =
      R"({"kty":"RSA","e":"AQAB","n":")" + encode_base64url(std::string(64, '\xc3')) + R"("})";
  std::vector<std::string_view> all(std::begin(refused), std::end(refused));
  all.push_back(small_rsa);
  for (const std::string_view json : all) {
    std::string error;
    EXPECT_FALSE(jwk(json, error)) << json;
    EXPECT_FALSE(error.empty()) << json;
  }
}

TEST(VerificationKey, APemKeyMustBeOfItsAlgorithmsKind) {
  // RFC 8037 A.2's Ed25519 public key as SubjectPublicKeyInfo.
  const std::string pem =
      "-----BEGIN PUBLIC KEY-----\n"
      "MCowBQYDK2VwAyEA11qYAYKxCrfVS/7TyWQHOg7hcvPapiMlrwIaaPcHURo=\n"
      "-----END PUBLIC KEY-----\n";
  std::string error;
  EXPECT_TRUE(VerificationKey::from_pem(pem, JwsAlgorithm::eddsa, error)) << error;
  EXPECT_FALSE(VerificationKey::from_pem(pem, JwsAlgorithm::es256, error));
  EXPECT_FALSE(VerificationKey::from_pem("not a key", JwsAlgorithm::rs256, error));
  EXPECT_FALSE(
      VerificationKey::from_secret("0123456789abcdef0123456789abcde", JwsAlgorithm::hs256, error))
      << "31 bytes: shorter than SHA-256";
  EXPECT_FALSE(VerificationKey::from_secret(std::string(64, 'k'), JwsAlgorithm::rs256, error));
}

}  // namespace
}  // namespace sluice::auth
