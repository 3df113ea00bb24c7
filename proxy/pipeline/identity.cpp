#include "proxy/pipeline/identity.hpp"

#include <fstream>
#include <limits>
#include <sstream>

#include "proxy/auth/token_cache.hpp"
#include "proxy/pipeline/request_key.hpp"

namespace sluice::pipeline {
namespace {

using config::Diagnostic;

std::optional<std::string> read_file(const std::string& path, std::string& error) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    error = "cannot read " + path;
    return std::nullopt;
  }
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

std::optional<auth::VerificationKey> configured_key(const config::JwtKeyConfig& key,
                                                    std::string& error) {
  const std::optional<auth::JwsAlgorithm> algorithm = auth::algorithm_named(key.algorithm);
  if (!algorithm) {
    error = "\"" + key.algorithm + "\" is not an algorithm sluice verifies";
    return std::nullopt;
  }
  if (key.file.empty()) {
    return auth::VerificationKey::from_secret(key.secret, *algorithm, error);
  }
  const std::optional<std::string> pem = read_file(key.file, error);
  if (!pem) {
    return std::nullopt;
  }
  std::optional<auth::VerificationKey> made =
      auth::VerificationKey::from_pem(*pem, *algorithm, error);
  if (!made) {
    error = key.file + ": " + error;
  }
  return made;
}

/// The provider's keys as the configuration gives them: `keys`, a JWKS file, or (a fetched set)
/// what `previous` holds for the same URL.
std::shared_ptr<const auth::KeySet> initial_keys(const config::JwtProviderConfig& provider,
                                                 const Identity* previous,
                                                 std::vector<Diagnostic>& problems) {
  const std::string path = "auth.jwt." + provider.name;
  auto set = std::make_shared<auth::KeySet>();
  if (!provider.jwks_url.empty()) {
    if (previous != nullptr) {
      for (std::size_t i = 0; i < previous->providers().size(); ++i) {
        // Providers are matched by name; the URL must be the same for the set to carry over.
        const auth::JwtProvider& old = *previous->providers()[i];
        if (old.name() == provider.name && old.source() == provider.jwks_url) {
          return old.keys();
        }
      }
    }
    return set;
  }
  std::string error;
  if (!provider.jwks_file.empty()) {
    if (const std::optional<std::string> text = read_file(provider.jwks_file, error)) {
      if (std::optional<auth::KeySet> read = auth::read_jwks(*text, error)) {
        return std::make_shared<const auth::KeySet>(std::move(*read));
      }
      error = provider.jwks_file + ": " + error;
    }
    problems.push_back({provider.jwks_at, path + ".jwks.file: " + error});
    return set;
  }
  for (std::size_t i = 0; i < provider.keys.size(); ++i) {
    if (std::optional<auth::VerificationKey> key = configured_key(provider.keys[i], error)) {
      set->keys.push_back(std::move(*key));
    } else {
      problems.push_back(
          {provider.keys[i].at, path + ".keys[" + std::to_string(i) + "]: " + error});
    }
  }
  return set;
}

auth::JwtRules rules_of(const config::JwtProviderConfig& provider) {
  auth::JwtRules rules;
  for (const std::string& name : provider.algorithms) {
    if (const std::optional<auth::JwsAlgorithm> algorithm = auth::algorithm_named(name)) {
      rules.algorithms.push_back(*algorithm);
    }
  }
  rules.issuer = provider.issuer;
  rules.audiences = provider.audiences;
  rules.leeway = std::chrono::duration_cast<std::chrono::seconds>(provider.leeway);
  return rules;
}

std::int64_t saturating_add(std::int64_t a, std::int64_t b) noexcept {
  std::int64_t sum = 0;
  if (__builtin_add_overflow(a, b, &sum)) {
    return b > 0 ? std::numeric_limits<std::int64_t>::max()
                 : std::numeric_limits<std::int64_t>::min();
  }
  return sum;
}

}  // namespace

std::optional<std::string_view> find_token(const config::JwtProviderConfig& provider,
                                           const RequestView& request) {
  using Kind = config::KeyPart::Kind;
  for (const config::KeyPart& place : provider.from) {
    std::optional<std::string_view> token;
    switch (place.kind) {
      case Kind::bearer:
        token = bearer_token(request.header("Authorization"));
        break;
      case Kind::cookie:
        token = cookie_value(request.header("Cookie"), place.name);
        break;
      case Kind::query:
        token = query_value(request.query(), place.name);
        break;
      case Kind::header:
        if (const Header* header = request.find_header(place.name)) {
          token = bearer_token(header->value).value_or(trim_whitespace(header->value));
        }
        break;
      default:
        break;
    }
    if (token && !token->empty()) {
      return token;
    }
  }
  return std::nullopt;
}

Identity::Identity(const config::ProxyConfig& config, const Identity* previous) : config_(config) {
  std::vector<Diagnostic> problems;
  for (const config::JwtProviderConfig& provider : config.jwt_providers) {
    providers_.push_back(std::make_unique<auth::JwtProvider>(
        provider.name, rules_of(provider), initial_keys(provider, previous, problems),
        provider.jwks_url));
  }
  if (!problems.empty()) {
    throw config::ConfigError(config.file, std::move(problems));
  }
}

auth::JwtProvider& Identity::provider(const config::JwtProviderConfig& config) const {
  return *providers_[static_cast<std::size_t>(&config - config_.jwt_providers.data())];
}

void Identity::authenticate(const config::JwtProviderConfig& config, const RequestView& request,
                            limiter::TimePoint now, Authentication& out) const {
  out.provider = &config;
  const std::optional<std::string_view> token = find_token(config, request);
  out.token = token.has_value();
  if (!token) {
    return;
  }
  const auth::JwtProvider& provider = this->provider(config);
  const std::int64_t seconds =
      std::chrono::floor<std::chrono::seconds>(now).time_since_epoch().count();
  thread_local auth::TokenCache cache;
  if (const auto* known = cache.find(provider.id(), *token, seconds)) {
    out.check = auth::JwtCheck::verified;
    out.cached = true;
    out.identity = *known;
    return;
  }
  auto verified = std::make_shared<auth::VerifiedJwt>();
  out.check = provider.verify(*token, seconds, *verified);
  if (out.check != auth::JwtCheck::verified) {
    return;
  }
  const std::int64_t leeway = provider.rules().leeway.count();
  cache.remember(provider.id(), *token, saturating_add(verified->not_before, -leeway),
                 saturating_add(verified->expires, leeway), verified);
  out.identity = std::move(verified);
}

}  // namespace sluice::pipeline
