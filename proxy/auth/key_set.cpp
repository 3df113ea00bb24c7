#include "proxy/auth/key_set.hpp"

#include <boost/json/parse.hpp>
#include <boost/json/value.hpp>

namespace sluice::auth {

std::optional<KeySet> read_jwks(std::string_view json, std::string& error) {
  if (json.size() > kMaxJwksBytes) {
    error = "the key set is larger than 1 MiB";
    return std::nullopt;
  }
  boost::json::parse_options options;
  options.max_depth = 8;
  boost::system::error_code ec;
  const boost::json::value root = boost::json::parse(json, ec, {}, options);
  const boost::json::value* keys =
      !ec && root.is_object() ? root.get_object().if_contains("keys") : nullptr;
  if (keys == nullptr || !keys->is_array()) {
    error = "not a JWK Set: expected a JSON object with a \"keys\" list";
    return std::nullopt;
  }
  KeySet set;
  for (std::size_t i = 0; i < keys->get_array().size(); ++i) {
    const boost::json::value& jwk = keys->get_array()[i];
    std::string why;
    std::optional<VerificationKey> key = jwk.is_object()
                                             ? VerificationKey::from_jwk(jwk.get_object(), why)
                                             : (why = "not a JSON object", std::nullopt);
    if (!key) {
      const boost::json::value* kid =
          jwk.is_object() ? jwk.get_object().if_contains("kid") : nullptr;
      set.skipped.push_back("keys[" + std::to_string(i) + "]" +
                            (kid != nullptr && kid->is_string()
                                 ? " (kid \"" + std::string(kid->get_string()) + "\")"
                                 : std::string()) +
                            ": " + why);
      continue;
    }
    for (const VerificationKey& earlier : set.keys) {
      if (!key->kid().empty() && earlier.kid() == key->kid()) {
        error = "the kid \"" + key->kid() + "\" names two keys";
        return std::nullopt;
      }
      if ((earlier.kind() == KeyKind::secret) != (key->kind() == KeyKind::secret)) {
        error = "the set mixes HMAC secrets (oct) with public keys";
        return std::nullopt;
      }
    }
    set.keys.push_back(std::move(*key));
  }
  if (set.keys.empty()) {
    error = "no key in the set verifies signatures" +
            (set.skipped.empty() ? std::string() : " (" + set.skipped.front() + ")");
    return std::nullopt;
  }
  return set;
}

}  // namespace sluice::auth
