#include "proxy/auth/jwt_verifier.hpp"

#include <algorithm>
#include <boost/json/parse.hpp>
#include <boost/json/value.hpp>
#include <cmath>
#include <limits>
#include <optional>

#include "proxy/auth/base64url.hpp"
#include "proxy/auth/jws_signature.hpp"

namespace sluice::auth {
namespace {

/// Nesting deeper than any real header or claims set: refused, not parsed.
constexpr std::size_t kMaxJsonDepth = 16;

/// A base64url part that is a JSON object, decoded and parsed; nullopt otherwise.
std::optional<boost::json::object> json_object_of(std::string_view part) {
  std::string text;
  if (part.empty() || !decode_base64url(part, text)) {
    return std::nullopt;
  }
  boost::json::parse_options options;
  options.max_depth = kMaxJsonDepth;
  boost::system::error_code ec;
  boost::json::value value = boost::json::parse(text, ec, {}, options);
  if (ec || !value.is_object()) {
    return std::nullopt;
  }
  return std::move(value.get_object());
}

/// A NumericDate (RFC 7519 §2) in whole seconds, clamped to int64; nullopt if not a number.
std::optional<std::int64_t> seconds_of(const boost::json::value& value) {
  if (value.is_int64()) {
    return value.get_int64();
  }
  if (value.is_uint64()) {
    return std::numeric_limits<std::int64_t>::max();  // beyond int64: far in the future
  }
  if (value.is_double()) {
    const double seconds = value.get_double();
    if (!std::isfinite(seconds)) {
      return std::nullopt;
    }
    constexpr double kLimit = 9.2e18;
    return static_cast<std::int64_t>(std::floor(std::clamp(seconds, -kLimit, kLimit)));
  }
  return std::nullopt;
}

std::string_view text_of(const boost::json::object& object, std::string_view name) {
  const boost::json::value* member = object.if_contains(name);
  return member != nullptr && member->is_string() ? std::string_view(member->get_string())
                                                  : std::string_view();
}

bool audience_accepted(const boost::json::value* audience, const JwtRules& rules) {
  if (rules.audiences.empty()) {
    return true;
  }
  auto known = [&](const boost::json::value& one) {
    return one.is_string() &&
           std::find(rules.audiences.begin(), rules.audiences.end(),
                     std::string_view(one.get_string())) != rules.audiences.end();
  };
  if (audience == nullptr) {
    return false;
  }
  if (audience->is_array()) {
    return std::any_of(audience->get_array().begin(), audience->get_array().end(), known);
  }
  return known(*audience);
}

/// The claims' time and issuer checks.
JwtCheck check_claims(const boost::json::object& claims, const JwtRules& rules, std::int64_t now,
                      std::int64_t& expires, std::int64_t& not_before) {
  const std::int64_t leeway = rules.leeway.count();
  const boost::json::value* exp = claims.if_contains("exp");
  const std::optional<std::int64_t> exp_seconds = exp ? seconds_of(*exp) : std::nullopt;
  if (!exp_seconds) {
    return exp ? JwtCheck::malformed : JwtCheck::expired;  // `exp` is required (SPEC §8)
  }
  // now must be before exp (RFC 7519 §4.1.4); saturating, as exp may be huge.
  if (now > std::numeric_limits<std::int64_t>::max() - leeway || now - leeway >= *exp_seconds) {
    return JwtCheck::expired;
  }
  if (const boost::json::value* nbf = claims.if_contains("nbf")) {
    const std::optional<std::int64_t> nbf_seconds = seconds_of(*nbf);
    if (!nbf_seconds) {
      return JwtCheck::malformed;
    }
    if (now + leeway < *nbf_seconds) {
      return JwtCheck::not_yet_valid;
    }
    not_before = *nbf_seconds;
  }
  if (!rules.issuer.empty() && text_of(claims, "iss") != rules.issuer) {
    return JwtCheck::issuer;
  }
  if (!audience_accepted(claims.if_contains("aud"), rules)) {
    return JwtCheck::audience;
  }
  expires = *exp_seconds;
  return JwtCheck::verified;
}

}  // namespace

std::string_view name_of(JwtCheck check) noexcept {
  switch (check) {
    case JwtCheck::verified:
      return "verified";
    case JwtCheck::malformed:
      return "malformed";
    case JwtCheck::algorithm:
      return "algorithm";
    case JwtCheck::header:
      return "header";
    case JwtCheck::unknown_key:
      return "unknown_key";
    case JwtCheck::signature:
      return "signature";
    case JwtCheck::expired:
      return "expired";
    case JwtCheck::not_yet_valid:
      return "not_yet_valid";
    case JwtCheck::issuer:
      return "issuer";
    case JwtCheck::audience:
      return "audience";
  }
  return "unknown";
}

JwtCheck verify_jws(std::string_view compact, std::span<const VerificationKey> keys,
                    std::span<const JwsAlgorithm> algorithms, std::string_view& payload) {
  if (compact.size() > kMaxTokenBytes) {
    return JwtCheck::malformed;
  }
  const std::size_t first = compact.find('.');
  const std::size_t second = first == std::string_view::npos ? first : compact.find('.', first + 1);
  if (second == std::string_view::npos || compact.find('.', second + 1) != std::string_view::npos) {
    return JwtCheck::malformed;  // a JWS has three parts (a JWE, five)
  }
  const std::string_view signing_input = compact.substr(0, second);
  const std::optional<boost::json::object> header = json_object_of(compact.substr(0, first));
  if (!header) {
    return JwtCheck::malformed;
  }
  const std::optional<JwsAlgorithm> algorithm = algorithm_named(text_of(*header, "alg"));
  if (!algorithm ||
      std::find(algorithms.begin(), algorithms.end(), *algorithm) == algorithms.end()) {
    return JwtCheck::algorithm;  // `none` among them, whatever its (empty) signature
  }
  std::string signature;
  if (!decode_base64url(compact.substr(second + 1), signature) || signature.empty()) {
    return JwtCheck::malformed;
  }
  for (const std::string_view refused : {"crit", "jwk", "jku", "x5u", "x5c"}) {
    if (header->contains(refused)) {
      return JwtCheck::header;
    }
  }
  const boost::json::value* kid = header->if_contains("kid");
  if (kid != nullptr && !kid->is_string()) {
    return JwtCheck::malformed;
  }
  bool some_key = false;
  bool valid = false;
  for (const VerificationKey& key : keys) {
    // A key without a `kid` (one configured from a file) answers to any; one with a `kid`, only
    // to tokens that name it or name none.
    if (!key.serves(*algorithm) ||
        (kid != nullptr && !key.kid().empty() && key.kid() != kid->get_string())) {
      continue;
    }
    some_key = true;
    if (signature_valid(key, *algorithm, signing_input, signature)) {
      valid = true;
      break;
    }
  }
  if (!some_key) {
    return JwtCheck::unknown_key;
  }
  if (!valid) {
    return JwtCheck::signature;
  }
  payload = compact.substr(first + 1, second - first - 1);
  return JwtCheck::verified;
}

JwtCheck verify_jwt(std::string_view compact, std::span<const VerificationKey> keys,
                    const JwtRules& rules, std::int64_t now, VerifiedJwt& token) {
  std::string_view payload;
  if (const JwtCheck signed_by = verify_jws(compact, keys, rules.algorithms, payload);
      signed_by != JwtCheck::verified) {
    return signed_by;
  }
  std::optional<boost::json::object> claims = json_object_of(payload);
  if (!claims) {
    return JwtCheck::malformed;
  }
  std::int64_t expires = 0;
  std::int64_t not_before = std::numeric_limits<std::int64_t>::min();
  const JwtCheck check = check_claims(*claims, rules, now, expires, not_before);
  if (check == JwtCheck::verified) {
    token.claims = std::move(*claims);
    token.expires = expires;
    token.not_before = not_before;
  }
  return check;
}

}  // namespace sluice::auth
