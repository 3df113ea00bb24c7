// Cold JWT verifications per second on one core: a token seen for the first time, verified
// whole (split, base64url, header and claims JSON, the signature on OpenSSL's EVP, the claims),
// for the algorithms issuers use most. Tokens and keys are minted by PyJWT
// (tests/support/mint_jwt.py). `openssl speed -seconds 3 rsa2048 ecdsap256 ed25519` on the same
// machine gives the signature checks' own ceiling (docs/benchmarks.md, "JWT verification").
#include <benchmark/benchmark.h>

#include <chrono>
#include <optional>
#include <string>

#include "proxy/auth/jwt_verifier.hpp"
#include "tests/support/minted_jwts.hpp"

namespace {

using namespace sluice;

constexpr std::int64_t kNow = 1'800'000'000;

const test::MintedJwts& minted() {
  static const test::MintedJwts all = test::mint_jwts(kNow);
  return all;
}

void verify(benchmark::State& state, const char* algorithm_name) {
  const auto found = minted().by_algorithm.find(algorithm_name);
  if (found == minted().by_algorithm.end()) {
    state.SkipWithError("the minting script did not run (python3-jwt)");
    return;
  }
  const test::MintedJwts::Signed& signed_with = found->second;
  const auth::JwsAlgorithm algorithm = *auth::algorithm_named(algorithm_name);
  std::string error;
  std::optional<auth::VerificationKey> key =
      signed_with.secret.empty()
          ? auth::VerificationKey::from_pem(signed_with.public_pem, algorithm, error)
          : auth::VerificationKey::from_secret(signed_with.secret, algorithm, error);
  if (!key) {
    state.SkipWithError(error.c_str());
    return;
  }
  const auth::JwtRules rules{.algorithms = {algorithm},
                             .issuer = "https://idp.test/",
                             .audiences = {"api"},
                             .leeway = std::chrono::seconds(0)};
  for (auto _ : state) {
    auth::VerifiedJwt token;
    const auth::JwtCheck check =
        auth::verify_jwt(signed_with.token, std::span(&*key, 1), rules, kNow, token);
    if (check != auth::JwtCheck::verified) {
      state.SkipWithError("a token did not verify");
      return;
    }
    benchmark::DoNotOptimize(token);
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations()));
}

BENCHMARK_CAPTURE(verify, RS256, "RS256");
BENCHMARK_CAPTURE(verify, PS256, "PS256");
BENCHMARK_CAPTURE(verify, ES256, "ES256");
BENCHMARK_CAPTURE(verify, EdDSA, "EdDSA");
BENCHMARK_CAPTURE(verify, HS256, "HS256");

}  // namespace

BENCHMARK_MAIN();
