// Cold JWT verifications per second on one core: a token seen for the first time, verified
// whole (split, base64url, header and claims JSON, the signature on OpenSSL's EVP, the claims),
// for the algorithms issuers use most. Tokens and keys are minted by PyJWT
// (tests/support/mint_jwt.py). `openssl speed -seconds 3 rsa2048 ecdsap256 ed25519` on the same
// machine gives the signature checks' own ceiling (docs/benchmarks.md, "JWT verification").
#include <benchmark/benchmark.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>

#include "proxy/auth/jwt_verifier.hpp"
#include "tests/support/minted_jwts.hpp"
#include "tests/support/pipeline_fixture.hpp"

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

/// A whole pipeline decision (route, keys, one sliding window) for a client that sends the same
/// token again: keyed on the token itself (`bearer`, the key a client chooses), or on the
/// verified caller (`jwt:sub`, the token verified once, then a cache lookup). SPEC §8 asks the
/// second to cost about the first.
void decide_keyed_on(benchmark::State& state, const char* key) {
  const auto found = minted().by_algorithm.find("ES256");
  if (found == minted().by_algorithm.end()) {
    state.SkipWithError("the minting script did not run (python3-jwt)");
    return;
  }
  const std::string pem_file = (std::filesystem::temp_directory_path() /
                                ("sluice-jwt-bench-" + std::to_string(::getpid()) + ".pem"))
                                   .string();
  std::ofstream(pem_file) << found->second.public_pem;
  const bool verifies = std::string_view(key).starts_with("jwt:");
  test::PipelineFixture fixture(
      "upstream: http://127.0.0.1:9000\n"
      "auth: {jwt: {idp: {issuer: \"https://idp.test/\", keys: [{file: \"" +
      pem_file +
      "\", alg: ES256}]}}}\n"
      "limiters: {per-caller: {algorithm: sliding_window, limit: 1000000000, window: 1m, key: \"" +
      key +
      "\"}}\n"
      "routes: [{name: api, " +
      (verifies ? "auth: {jwt: idp}, " : "") + "limiters: [per-caller]}]\n");
  const std::string authorization = "Bearer " + found->second.token;
  const test::PipelineFixture::Request request{.headers = {{"Authorization", authorization}}};
  limiter::TimePoint now{std::chrono::seconds(kNow)};
  for (auto _ : state) {
    now += std::chrono::microseconds(1);
    const pipeline::Decision decision = fixture.send(request, now);
    benchmark::DoNotOptimize(decision.outcome);
  }
  std::remove(pem_file.c_str());
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations()));
}

BENCHMARK_CAPTURE(decide_keyed_on, bearer, "bearer");
BENCHMARK_CAPTURE(decide_keyed_on, jwt_sub, "jwt:sub");

BENCHMARK_CAPTURE(verify, RS256, "RS256");
BENCHMARK_CAPTURE(verify, PS256, "PS256");
BENCHMARK_CAPTURE(verify, ES256, "ES256");
BENCHMARK_CAPTURE(verify, EdDSA, "EdDSA");
BENCHMARK_CAPTURE(verify, HS256, "HS256");

}  // namespace

BENCHMARK_MAIN();
