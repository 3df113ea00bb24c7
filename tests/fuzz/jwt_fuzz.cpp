// Tokens as a client sends them, through the JWT verifier (proxy/auth/): splitting, base64url,
// the header's and the claims' JSON, the algorithm and key choice, the signature checks and the
// claims checks, with two keys: RFC 7515 A.1's HS256 secret (so that its example token, a seed,
// verifies and the claims are reached) and A.3's P-256 key. Checks: no crash, leak or undefined
// behaviour; a verified token has its `exp` after the verification time; base64url decodes
// what it encodes.
#include <array>
#include <boost/json/parse.hpp>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "proxy/auth/base64url.hpp"
#include "proxy/auth/jwt_verifier.hpp"

namespace {

namespace auth = sluice::auth;

void require(bool condition, const char* what) {
  if (!condition) {
    std::fprintf(stderr, "jwt_fuzz: %s\n", what);
    std::abort();
  }
}

/// The example's verification time: a second before its `exp`.
constexpr std::int64_t kNow = 1'300'819'379;

const std::vector<auth::VerificationKey>& keys() {
  static const std::vector<auth::VerificationKey> all = [] {
    std::vector<auth::VerificationKey> made;
    std::string secret, error;
    require(auth::decode_base64url("AyM1SysPpbyDfgZld3umj1qzKObwVMkoqQ-EstJQLr_T-1qS0gZH75aKtMN3Y"
                                   "j0iPS4hcgUuTwjAzZr1Z9CAow",
                                   secret),
            "the example's secret decodes");
    made.push_back(*auth::VerificationKey::from_secret(secret, auth::JwsAlgorithm::hs256, error));
    std::optional<auth::VerificationKey> p256 = auth::VerificationKey::from_jwk(
        boost::json::parse(R"({"kty":"EC","crv":"P-256","kid":"p256",)"
                           R"("x":"f83OJ3D2xF1Bg8vub9tLe1gHMzV76e8Tus9uPHvRVEU",)"
                           R"("y":"x_FEzRu9m36HLN_tue659LNpXW6pCyStikYjKIWI5a0"})")
            .as_object(),
        error);
    require(p256.has_value(), "the example's P-256 key reads");
    made.push_back(std::move(*p256));
    return made;
  }();
  return all;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  const auth::JwtRules rules{.algorithms = {auth::JwsAlgorithm::hs256, auth::JwsAlgorithm::es256,
                                            auth::JwsAlgorithm::rs256},
                             .issuer = "joe",
                             .audiences = {},
                             .leeway = std::chrono::seconds(5)};
  auth::VerifiedJwt token;
  if (auth::verify_jwt(input, keys(), rules, kNow, token) == auth::JwtCheck::verified) {
    require(token.expires + 5 > kNow, "a verified token has not expired");
    require(token.claims.contains("exp"), "a verified token has an exp");
  }
  std::string decoded;
  if (auth::decode_base64url(input, decoded)) {
    require(auth::encode_base64url(decoded) == input, "base64url reads one spelling only");
  }
  return 0;
}
