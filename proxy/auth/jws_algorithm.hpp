#pragma once

#include <optional>
#include <string_view>

namespace sluice::auth {

/// The JWS algorithms sluice verifies (RFC 7518 §3, RFC 8037 §3.1). `none` is not one of them.
enum class JwsAlgorithm {
  rs256,
  rs384,
  rs512,
  ps256,
  ps384,
  ps512,
  es256,
  es384,
  es512,
  eddsa,
  hs256,
  hs384,
  hs512,
};

/// The kind of key an algorithm takes; a key serves only algorithms of its own kind, so that an
/// RSA public key can never be taken for an HMAC secret (RFC 8725 §2.1, §3.1).
enum class KeyKind { rsa, ec_p256, ec_p384, ec_p521, ed25519, secret };

/// The algorithm a JWS header's `alg` names, or nullopt (`none` included).
std::optional<JwsAlgorithm> algorithm_named(std::string_view name) noexcept;
std::string_view name_of(JwsAlgorithm algorithm) noexcept;
KeyKind key_kind_of(JwsAlgorithm algorithm) noexcept;
/// An ECDSA signature's length in bytes (R and S, each the curve's size); 0 for other kinds.
std::size_t ecdsa_signature_bytes(JwsAlgorithm algorithm) noexcept;

}  // namespace sluice::auth
