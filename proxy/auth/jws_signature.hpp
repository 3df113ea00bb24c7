#pragma once

#include <string_view>

#include "proxy/auth/jws_algorithm.hpp"
#include "proxy/auth/verification_key.hpp"

namespace sluice::auth {

/// Whether `signature` is `key`'s signature with `algorithm` over `signing_input` (the header
/// and payload as received, RFC 7515 §5.2). False for a key that does not serve the algorithm,
/// an ECDSA signature that is not exactly R‖S of the curve's size (checked before anything is
/// converted), and an HMAC that differs (compared in constant time).
bool signature_valid(const VerificationKey& key, JwsAlgorithm algorithm,
                     std::string_view signing_input, std::string_view signature);

}  // namespace sluice::auth
