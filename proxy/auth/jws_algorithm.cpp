#include "proxy/auth/jws_algorithm.hpp"

#include <array>
#include <utility>

namespace sluice::auth {
namespace {

constexpr std::array<std::pair<std::string_view, JwsAlgorithm>, 13> kNames{{
    {"RS256", JwsAlgorithm::rs256},
    {"RS384", JwsAlgorithm::rs384},
    {"RS512", JwsAlgorithm::rs512},
    {"PS256", JwsAlgorithm::ps256},
    {"PS384", JwsAlgorithm::ps384},
    {"PS512", JwsAlgorithm::ps512},
    {"ES256", JwsAlgorithm::es256},
    {"ES384", JwsAlgorithm::es384},
    {"ES512", JwsAlgorithm::es512},
    {"EdDSA", JwsAlgorithm::eddsa},
    {"HS256", JwsAlgorithm::hs256},
    {"HS384", JwsAlgorithm::hs384},
    {"HS512", JwsAlgorithm::hs512},
}};

}  // namespace

std::optional<JwsAlgorithm> algorithm_named(std::string_view name) noexcept {
  for (const auto& [known, algorithm] : kNames) {
    if (known == name) {  // case-sensitive, as JWS names are
      return algorithm;
    }
  }
  return std::nullopt;
}

std::string_view name_of(JwsAlgorithm algorithm) noexcept {
  for (const auto& [name, known] : kNames) {
    if (known == algorithm) {
      return name;
    }
  }
  return "?";
}

KeyKind key_kind_of(JwsAlgorithm algorithm) noexcept {
  switch (algorithm) {
    case JwsAlgorithm::rs256:
    case JwsAlgorithm::rs384:
    case JwsAlgorithm::rs512:
    case JwsAlgorithm::ps256:
    case JwsAlgorithm::ps384:
    case JwsAlgorithm::ps512:
      return KeyKind::rsa;
    case JwsAlgorithm::es256:
      return KeyKind::ec_p256;
    case JwsAlgorithm::es384:
      return KeyKind::ec_p384;
    case JwsAlgorithm::es512:
      return KeyKind::ec_p521;
    case JwsAlgorithm::eddsa:
      return KeyKind::ed25519;
    case JwsAlgorithm::hs256:
    case JwsAlgorithm::hs384:
    case JwsAlgorithm::hs512:
      return KeyKind::secret;
  }
  return KeyKind::secret;
}

std::size_t ecdsa_signature_bytes(JwsAlgorithm algorithm) noexcept {
  switch (algorithm) {
    case JwsAlgorithm::es256:
      return 64;
    case JwsAlgorithm::es384:
      return 96;
    case JwsAlgorithm::es512:
      return 132;  // P-521: 66 bytes each
    default:
      return 0;
  }
}

}  // namespace sluice::auth
