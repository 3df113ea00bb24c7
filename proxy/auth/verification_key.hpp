#pragma once

#include <openssl/evp.h>

#include <boost/json/object.hpp>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "proxy/auth/jws_algorithm.hpp"

namespace sluice::auth {

struct EvpKeyFree {
  void operator()(EVP_PKEY* key) const noexcept { EVP_PKEY_free(key); }
};
using EvpKey = std::unique_ptr<EVP_PKEY, EvpKeyFree>;

/// A key that verifies JWS signatures: a public key (RSA of 2048 bits or more, EC on P-256,
/// P-384 or P-521, Ed25519) or an HMAC secret, and what it may verify: the algorithms of its kind,
/// or the one its JWK's `alg` names. Made from PEM, a secret, or a JWK (RFC 7517).
class VerificationKey {
 public:
  /// A public key in PEM (SubjectPublicKeyInfo) for `algorithm`; nullopt and `error` when it is
  /// not one, or not of the algorithm's kind.
  static std::optional<VerificationKey> from_pem(std::string_view pem, JwsAlgorithm algorithm,
                                                 std::string& error);
  /// An HMAC secret for `algorithm`: at least as long as its hash (RFC 7518 §3.2).
  static std::optional<VerificationKey> from_secret(std::string secret, JwsAlgorithm algorithm,
                                                    std::string& error);
  /// A JWK of `kty` RSA, EC, OKP (Ed25519) or oct. Its `kid` names it; its `alg`, when there,
  /// is the only algorithm it serves; a `use` other than `sig` or `key_ops` without `verify`
  /// make it no verification key.
  static std::optional<VerificationKey> from_jwk(const boost::json::object& jwk,
                                                 std::string& error);

  /// Whether it may verify a signature made with `algorithm`.
  bool serves(JwsAlgorithm algorithm) const noexcept;
  const std::string& kid() const noexcept { return kid_; }
  KeyKind kind() const noexcept { return kind_; }
  EVP_PKEY* public_key() const noexcept { return public_key_.get(); }
  const std::string& secret() const noexcept { return secret_; }

 private:
  VerificationKey(KeyKind kind, EvpKey key, std::string secret)
      : kind_(kind), public_key_(std::move(key)), secret_(std::move(secret)) {}

  KeyKind kind_;
  EvpKey public_key_;
  std::string secret_;
  std::string kid_;
  std::optional<JwsAlgorithm> only_;  ///< A JWK's `alg`, or the algorithm it was configured for.
};

/// The kind of a public key, or nullopt for one sluice does not verify with (RSA under 2048
/// bits, another curve, another type).
std::optional<KeyKind> kind_of(EVP_PKEY* key, std::string& error);

}  // namespace sluice::auth
