// JWK Sets as identity providers publish them: signing keys beside encryption keys, and the
// sets a verifier must refuse whole.
#include "proxy/auth/key_set.hpp"

#include <gtest/gtest.h>

#include <boost/json/serialize.hpp>

#include "tests/support/minted_jwts.hpp"

namespace sluice::auth {
namespace {

const test::MintedJwts& minted_keys() {
  static const test::MintedJwts all = test::mint_jwts(1'800'000'000);
  return all;
}

std::string jwk_text(const std::string& algorithm) {
  return boost::json::serialize(minted_keys().by_algorithm.at(algorithm).jwk);
}

TEST(ReadJwks, ReadsEverySigningKeyAndSkipsEncryptionKeys) {
  ASSERT_FALSE(minted_keys().by_algorithm.empty()) << "the minting script ran";
  // An RSA-OAEP key for encryption sits beside the signing keys (as Keycloak publishes them).
  const std::string text =
      R"({"keys":[)" + jwk_text("RS256") + "," + jwk_text("ES256") + "," + jwk_text("EdDSA") +
      R"(,{"kty":"RSA","use":"enc","alg":"RSA-OAEP","kid":"enc-1","n":"AQAB","e":"AQAB"}]})";
  std::string error;
  const std::optional<KeySet> set = read_jwks(text, error);
  ASSERT_TRUE(set) << error;
  ASSERT_EQ(set->keys.size(), 3U);
  EXPECT_EQ(set->keys[0].kid(), "key-rs256");
  EXPECT_EQ(set->keys[1].kind(), KeyKind::ec_p256);
  EXPECT_EQ(set->keys[2].kind(), KeyKind::ed25519);
  ASSERT_EQ(set->skipped.size(), 1U);
  EXPECT_EQ(set->skipped[0],
            "keys[3] (kid \"enc-1\"): the JWK is not for verifying signatures (`use`, `key_ops`)");
}

TEST(ReadJwks, RefusesSetsThatCannotBeTrustedWhole) {
  const std::string es256 = jwk_text("ES256");
  const std::pair<std::string, std::string> refused[] = {
      {"[]", "not a JWK Set: expected a JSON object with a \"keys\" list"},
      {R"({"keys":{}})", "not a JWK Set: expected a JSON object with a \"keys\" list"},
      {R"({"keys":[)", "not a JWK Set: expected a JSON object with a \"keys\" list"},
      {R"({"keys":[]})", "no key in the set verifies signatures"},
      {R"({"keys":[{"kty":"EC","crv":"P-256","x":"AA","y":"AA"}]})",
       "no key in the set verifies signatures (keys[0]: the EC JWK's point is not on its curve)"},
      {R"({"keys":[)" + es256 + "," + es256 + "]}", "the kid \"key-es256\" names two keys"},
      {R"({"keys":[)" + es256 + "," + jwk_text("HS256") + "]}",
       "the set mixes HMAC secrets (oct) with public keys"},
  };
  for (const auto& [text, expected] : refused) {
    std::string error;
    EXPECT_FALSE(read_jwks(text, error)) << text;
    EXPECT_EQ(error, expected) << text;
  }
  std::string error;
  EXPECT_FALSE(read_jwks(std::string(kMaxJwksBytes + 1, ' '), error));
  EXPECT_EQ(error, "the key set is larger than 1 MiB");
}

}  // namespace
}  // namespace sluice::auth
