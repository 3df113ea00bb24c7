#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "proxy/auth/verification_key.hpp"

namespace sluice::auth {

/// The longest JWK Set read: a real one is a few kilobytes.
inline constexpr std::size_t kMaxJwksBytes = 1024 * 1024;

/// The keys a provider verifies with. Replaced whole when its key set is read again, never
/// changed in place, so a verification in flight keeps the set it started with.
struct KeySet {
  std::vector<VerificationKey> keys;
  /// Keys of the set that are not for verifying signatures or not of a kind sluice verifies
  /// (`use: enc`, RSA-OAEP, X25519): left out, each with its `kid` and why, for the logs.
  std::vector<std::string> skipped;
};

/// Reads a JWK Set (RFC 7517 §5): `{"keys": [...]}`. Keys that cannot verify are skipped, not
/// fatal, as identity providers publish encryption keys beside signing keys. nullopt and `error`
/// when the text is not a key set, no key is left, a `kid` is repeated, or HMAC secrets sit
/// beside public keys (one set, one kind of trust: RFC 8725 §3.1).
std::optional<KeySet> read_jwks(std::string_view json, std::string& error);

}  // namespace sluice::auth
