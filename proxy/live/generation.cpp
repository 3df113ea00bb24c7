#include "proxy/live/generation.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>

#include "config/url.hpp"
#include "proxy/tls/contexts.hpp"

namespace sluice::live {
namespace {

/// How a route's `cost_from` reads a response, as the cost meter takes it.
std::unique_ptr<const cost::MeterSpec> meter_spec(const config::Route& route) {
  if (!route.cost_from) {
    return nullptr;
  }
  using Source = config::CostFrom::Source;
  const config::CostFrom& from = *route.cost_from;
  auto spec = std::make_unique<cost::MeterSpec>();
  switch (from.source) {
    case Source::usage:
      spec->kind = cost::MeterSpec::Kind::usage;
      spec->usage = from.usage == config::CostFrom::Usage::openai ? cost::Usage::openai
                                                                  : cost::Usage::anthropic;
      spec->count = from.count == config::CostFrom::Count::total   ? cost::UsageCount::total
                    : from.count == config::CostFrom::Count::input ? cost::UsageCount::input
                                                                   : cost::UsageCount::output;
      break;
    case Source::header:
      spec->kind = cost::MeterSpec::Kind::header;
      spec->header = from.field;
      break;
    case Source::json:
      spec->kind = cost::MeterSpec::Kind::json;
      for (std::size_t begin = 0; begin <= from.field.size();) {
        const std::size_t end = std::min(from.field.find('.', begin), from.field.size());
        spec->path.push_back(from.field.substr(begin, end - begin));
        begin = end + 1;
      }
      break;
    case Source::bytes:
      spec->kind = cost::MeterSpec::Kind::bytes;
      break;
  }
  return spec;
}

}  // namespace

Generation::Generation(std::shared_ptr<const config::ProxyConfig> loaded,
                       const Generation* previous, telemetry::Metrics& metrics,
                       const KeySetFetch& fetch)
    : config(std::move(loaded)),
      tls(tls::make_contexts(*config)),
      pipeline(*config, previous ? &previous->pipeline : nullptr),
      unrouted(metrics.route("")) {
  for (const std::string& warning : tls->warnings) {
    spdlog::warn("{}", warning);
  }
  fetch_key_sets(fetch);
  for (const config::JwtProviderConfig& provider : config->jwt_providers) {
    jwt_counters.push_back(metrics.jwt(provider.name));
  }
  for (const config::Route& route : config->routes) {
    route_counters.push_back(metrics.route(route.name));
    meter_specs.push_back(meter_spec(route));
    const config::Upstream* upstream = route.upstream ? &*route.upstream : nullptr;
    if (!upstream && config->upstream) {
      upstream = &*config->upstream;
    }
    upstream_counters.push_back(upstream ? metrics.upstream(upstream->url)
                                         : std::vector<telemetry::UpstreamCounters*>{});
  }
  if (config->top_keys > 0 && !config->limiters.empty()) {
    heavy_hitters = std::make_unique<telemetry::HeavyHitters>(config->limiters.size(),
                                                              metrics.loops(), config->top_keys);
  }
  for (const config::LimiterConfig& limiter : config->limiters) {
    cost_counters.push_back(limiter.settled_later() ? metrics.cost(limiter.name)
                                                    : std::vector<telemetry::CostCounters*>{});
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

telemetry::CostCounters& Generation::cost_counters_for(const config::LimiterConfig& limiter,
                                                       std::size_t loop) const {
  return *cost_counters[static_cast<std::size_t>(&limiter - config->limiters.data())][loop];
}

}  // namespace sluice::live
