#pragma once

#include <boost/json/object.hpp>
#include <chrono>
#include <cstdint>
#include <limits>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "proxy/auth/jws_algorithm.hpp"
#include "proxy/auth/verification_key.hpp"

namespace sluice::auth {

/// The longest token read: a JWT past it is refused before any decoding (SPEC §8).
inline constexpr std::size_t kMaxTokenBytes = 8 * 1024;

/// What a provider accepts (SPEC §8): its algorithms (an explicit list, RFC 8725 §3.1), its
/// issuer, its audiences (none: any), and the leeway on `exp` and `nbf`.
struct JwtRules {
  std::vector<JwsAlgorithm> algorithms;
  std::string issuer;
  std::vector<std::string> audiences;
  std::chrono::seconds leeway{0};
};

/// How a token fared: verified, or the check it failed (named in the 401's problem+json).
enum class JwtCheck {
  verified,
  malformed,      ///< not three base64url parts of JSON objects, or too long
  algorithm,      ///< an algorithm not accepted (`none` included)
  header,         ///< `crit`, or a key or key URL in the header (`jwk`, `jku`, `x5u`, `x5c`)
  unknown_key,    ///< no key of the provider's serves its `kid` and algorithm
  signature,      ///< no key verifies it
  expired,        ///< past `exp` (beyond the leeway), or no `exp`
  not_yet_valid,  ///< before `nbf` (beyond the leeway)
  issuer,         ///< `iss` is not the provider's
  audience,       ///< `aud` names none of the provider's audiences
};
std::string_view name_of(JwtCheck check) noexcept;

/// A verified token's claims, and when it is valid (seconds since the epoch, before leeway).
struct VerifiedJwt {
  boost::json::object claims;
  std::int64_t expires = 0;
  std::int64_t not_before = std::numeric_limits<std::int64_t>::min();  ///< No `nbf`: min.
};

/// The JWS half of verify_jwt (RFC 7515): the header's `alg` among `algorithms`, no `crit` and no
/// key carried in the header, the signature over the bytes as received by a key that serves
/// that algorithm. `verified` sets `payload` to the payload's base64url part, not decoded.
JwtCheck verify_jws(std::string_view compact, std::span<const VerificationKey> keys,
                    std::span<const JwsAlgorithm> algorithms, std::string_view& payload);

/// Verifies a compact JWS token (RFC 7519) with `keys` under `rules` at `now` (seconds since the
/// epoch): the header's `alg` among the rules', no `crit` and no key carried in the header
/// (RFC 8725 §3.10), the signature over the bytes as received by a key that serves that
/// algorithm (among those with the `kid` it names, when it names one, and those without a
/// `kid`), then `exp` (required), `nbf`, `iss` and `aud`. `verified` fills `token`.
JwtCheck verify_jwt(std::string_view compact, std::span<const VerificationKey> keys,
                    const JwtRules& rules, std::int64_t now, VerifiedJwt& token);

}  // namespace sluice::auth
