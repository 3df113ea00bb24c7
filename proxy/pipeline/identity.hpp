#pragma once

#include <memory>
#include <string_view>
#include <vector>

#include "config/proxy_config.hpp"
#include "limiter/time.hpp"
#include "proxy/auth/jwt_provider.hpp"
#include "proxy/pipeline/request_view.hpp"

namespace sluice::pipeline {

/// How a request's token fared on a route with `auth` (SPEC §8).
struct Authentication {
  const config::JwtProviderConfig* provider = nullptr;  ///< Null: the route verifies no token.
  /// The verified claims, shared with the thread's token cache; null without a valid token.
  std::shared_ptr<const auth::VerifiedJwt> identity;
  auth::JwtCheck check = auth::JwtCheck::verified;  ///< Of the token, when there was one.
  bool token = false;                               ///< The request carried one.
  bool cached = false;  ///< Verified earlier on this thread: no signature was checked now.

  /// Whether the request must be answered 401: a token that did not verify, or none where one
  /// is required.
  bool refused(const config::RouteAuth& route) const noexcept {
    return token ? check != auth::JwtCheck::verified : route.required;
  }
};

/// The JWT providers of a configuration (`auth.jwt`), their keys read, and the verification of
/// a request's token. Thread-safe: each thread remembers the tokens it verified (TokenCache).
class Identity {
 public:
  /// Reads the providers' key files (PEM keys, JWKS files). A fetched key set (`jwks.url`)
  /// starts with the set `previous` fetched from the same URL, else empty until it is fetched.
  /// Throws config::ConfigError, naming where each unusable key is written.
  Identity(const config::ProxyConfig& config, const Identity* previous);

  /// The provider built from `config` (one of the configuration's providers).
  auth::JwtProvider& provider(const config::JwtProviderConfig& config) const;
  /// The providers, in the configuration's order.
  const std::vector<std::unique_ptr<auth::JwtProvider>>& providers() const noexcept {
    return providers_;
  }

  /// Finds the request's token where `provider` says tokens travel and verifies it at `now`
  /// (a token this thread verified before, and still valid, costs a lookup).
  void authenticate(const config::JwtProviderConfig& provider, const RequestView& request,
                    limiter::TimePoint now, Authentication& out) const;

 private:
  const config::ProxyConfig& config_;
  std::vector<std::unique_ptr<auth::JwtProvider>> providers_;  ///< As config_.jwt_providers.
};

/// Where a provider reads tokens from (`from`), first found wins; nullopt when none is there.
std::optional<std::string_view> find_token(const config::JwtProviderConfig& provider,
                                           const RequestView& request);

}  // namespace sluice::pipeline
