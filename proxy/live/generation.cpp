#include "proxy/live/generation.hpp"

#include <algorithm>

#include "proxy/tls/contexts.hpp"

namespace sluice::live {

Generation::Generation(std::shared_ptr<const config::ProxyConfig> loaded,
                       const Generation* previous, telemetry::Metrics& metrics)
    : config(std::move(loaded)),
      tls(tls::make_contexts(*config)),
      pipeline(*config, previous ? &previous->pipeline : nullptr),
      unrouted(metrics.route("")) {
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

telemetry::RouteCounters& Generation::counters_for(const config::Route* route,
                                                   std::size_t loop) const {
  if (route == nullptr) {
    return *unrouted[loop];
  }
  return *route_counters[static_cast<std::size_t>(route - config->routes.data())][loop];
}

telemetry::UpstreamCounters& Generation::upstream_counters_for(const config::Route& route,
                                                               std::size_t loop) const {
  return *upstream_counters[static_cast<std::size_t>(&route - config->routes.data())][loop];
}

}  // namespace sluice::live
