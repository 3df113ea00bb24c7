#include "proxy/live/generation.hpp"

#include <algorithm>

#include "config/url.hpp"
#include "proxy/tls/contexts.hpp"

namespace sluice::live {

Generation::Generation(std::shared_ptr<const config::ProxyConfig> loaded,
                       const Generation* previous, telemetry::Metrics& metrics,
                       const KeySetFetch& fetch)
    : config(std::move(loaded)),
      tls(tls::make_contexts(*config)),
      pipeline(*config, previous ? &previous->pipeline : nullptr),
      unrouted(metrics.route("")) {
  fetch_key_sets(fetch);
  for (const config::JwtProviderConfig& provider : config->jwt_providers) {
    jwt_counters.push_back(metrics.jwt(provider.name));
  }
  for (const config::Route& route : config->routes) {
    route_counters.push_back(metrics.route(route.name));
    const config::Upstream* upstream = route.upstream ? &*route.upstream : nullptr;
    if (!upstream && config->upstream) {
      upstream = &*config->upstream;
    }
    upstream_counters.push_back(upstream ? metrics.upstream(upstream->url)
                                         : std::vector<telemetry::UpstreamCounters*>{});
  }
  for (const config::LimiterConfig& limiter : config->limiters) {
    for (const config::KeyPart& part : limiter.key.parts) {
      if (part.kind == config::KeyPart::Kind::query &&
          std::find(secret_query.begin(), secret_query.end(), part.name) == secret_query.end()) {
        secret_query.push_back(part.name);
      }
    }
  }
}

void Generation::fetch_key_sets(const KeySetFetch& fetch) const {
  if (!fetch) {
    return;
  }
  std::vector<config::Diagnostic> problems;
  for (const config::JwtProviderConfig& provider : config->jwt_providers) {
    auth::JwtProvider& built = pipeline.identity().provider(provider);
    if (provider.jwks_url.empty() || !built.keys()->keys.empty()) {
      continue;  // keys from files, or a set the previous generation fetched from the same URL
    }
    std::string error;
    if (std::optional<auth::KeySet> keys = fetch(provider.jwks_url, *tls, *config, error)) {
      built.replace_keys(std::make_shared<const auth::KeySet>(std::move(*keys)));
    } else {
      problems.push_back({provider.jwks_at, "auth.jwt." + provider.name + ".jwks.url: " +
                                                config::redact_url(provider.jwks_url) + ": " +
                                                error});
    }
  }
  if (!problems.empty()) {
    throw config::ConfigError(config->file, std::move(problems));
  }
}

telemetry::RouteCounters& Generation::counters_for(const config::Route* route,
                                                   std::size_t loop) const {
  if (route == nullptr) {
    return *unrouted[loop];
  }
  return *route_counters[static_cast<std::size_t>(route - config->routes.data())][loop];
}

telemetry::JwtCounters& Generation::jwt_counters_for(const config::JwtProviderConfig& provider,
                                                     std::size_t loop) const {
  return *jwt_counters[static_cast<std::size_t>(&provider - config->jwt_providers.data())][loop];
}

telemetry::UpstreamCounters& Generation::upstream_counters_for(const config::Route& route,
                                                               std::size_t loop) const {
  return *upstream_counters[static_cast<std::size_t>(&route - config->routes.data())][loop];
}

}  // namespace sluice::live
