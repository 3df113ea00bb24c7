#include "proxy/admin/metrics_page.hpp"

#include <algorithm>

namespace sluice::admin {

std::uint64_t lease_holders_of(const store::Store& store) {
  const auto health = store.health();
  return std::max<std::uint64_t>(health ? health->lease_holders : 0, 1);
}

AdminResponse metrics_page(const AdminRequest& request, const live::Generation& generation,
                           const http::LoopContext& context) {
  const auto keys = generation.pipeline.limiter_keys();
  telemetry::Metrics::Gauges gauges{.limiter_keys = keys,
                                    .open_connections = context.proxy.connections.load(),
                                    .parked_connections = context.proxy.parked.load(),
                                    .access_log_dropped = context.proxy.access_log.dropped()};
  if (const auto health = context.proxy.store->health()) {
    gauges.store = health->name;
    gauges.store_errors = health->errors;
    gauges.store_available = health->available;
    gauges.store_cached_refusals = health->cached_refusals;
    gauges.store_calls = health->calls;
    gauges.store_requests_in_calls = health->requests_in_calls;
    gauges.store_refunds = health->refunds;
    gauges.store_lost_settlements = health->lost_settlements;
    gauges.store_lease_hits = health->lease_hits;
    gauges.store_lease_holders = health->lease_holders;
  }
  std::vector<std::pair<std::string_view, std::uint64_t>> lease_bounds;
  if (gauges.store != "memory") {
    for (const config::LimiterConfig& limiter : generation.config->limiters) {
      if (limiter.lease != 0) {
        lease_bounds.emplace_back(
            limiter.name, limiter.lease * std::max<std::uint64_t>(gauges.store_lease_holders, 1));
      }
    }
  }
  gauges.lease_bounds = lease_bounds;
  return text_response(request, http::status::ok, context.proxy.metrics.render(gauges),
                       "text/plain; version=0.0.4; charset=utf-8");
}

}  // namespace sluice::admin
