#include "proxy/admin/stats.hpp"

#include <algorithm>
#include <boost/json/array.hpp>
#include <charconv>
#include <ctime>
#include <string>

#include "limiter/limiter_options.hpp"
#include "proxy/admin/metrics_page.hpp"
#include "proxy/pipeline/request_key.hpp"

namespace sluice::admin {
namespace {

namespace json = boost::json;

constexpr std::array<std::string_view, 3> kUpstreamErrorNames{"connect", "timeout", "broken"};

json::object history_json(const telemetry::TrafficHistory::Window& window) {
  json::array routes;
  for (const telemetry::TrafficHistory::Series& series : window.routes) {
    json::object route{{"route", series.route}};
    // Only the decisions seen in the window: the page reads a missing one as zeros.
    json::object decisions;
    for (std::size_t d = 0; d < telemetry::kMetricDecisions; ++d) {
      const auto& rates = series.decisions[d];
      if (std::any_of(rates.begin(), rates.end(), [](std::uint32_t rate) { return rate != 0; })) {
        decisions[telemetry::kMetricDecisionNames[d]] = json::array(rates.begin(), rates.end());
      }
    }
    route["per_second"] = std::move(decisions);
    routes.push_back(std::move(route));
  }
  return {{"newest", window.newest}, {"seconds", window.seconds}, {"routes", std::move(routes)}};
}

std::string utc_text(std::chrono::system_clock::time_point at) {
  const std::time_t seconds = std::chrono::system_clock::to_time_t(at);
  std::tm parts{};
  gmtime_r(&seconds, &parts);
  char text[32];
  const std::size_t size = std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", &parts);
  return {text, size};
}

json::value last_reload(const http::LoopContext& context) {
  const std::optional<live::LastReload> last =
      context.proxy.reloader ? context.proxy.reloader->last() : std::nullopt;
  if (!last) {
    return nullptr;
  }
  const auto texts = [](const std::vector<std::string>& items) {
    return json::array(items.begin(), items.end());
  };
  return json::object{{"ok", last->report.ok},
                      {"trigger", last->trigger},
                      {"at", utc_text(last->at)},
                      {"kept_state", last->report.kept_state},
                      {"errors", texts(last->report.errors)},
                      {"restart_needed", texts(last->report.restart_needed)}};
}

json::object store_health(const http::LoopContext& context) {
  const auto health = context.proxy.store ? context.proxy.store->health() : std::nullopt;
  if (!health) {
    return {{"name", "memory"}, {"available", true}};
  }
  json::array nodes;
  for (const store::StoreHealth::Node& node : health->nodes) {
    nodes.push_back(json::object{{"address", node.address},
                                 {"breaker", node.breaker_open ? "open" : "closed"},
                                 {"serving", node.serving}});
  }
  return {{"name", health->name},
          {"available", health->available},
          {"errors", health->errors},
          {"cached_refusals", health->cached_refusals},
          {"calls", health->calls},
          {"requests_in_calls", health->requests_in_calls},
          {"refunds", health->refunds},
          {"lost_settlements", health->lost_settlements},
          {"lease_hits", health->lease_hits},
          {"lease_holders", health->lease_holders},
          {"nodes", nodes}};
}

}  // namespace

json::object stats(const live::Generation& generation, const http::LoopContext& context,
                   std::uint64_t since) {
  const telemetry::Metrics& metrics = context.proxy.metrics;
  json::array routes;
  for (const auto& [route, counts] : metrics.route_totals()) {
    json::object decisions;
    for (std::size_t d = 0; d < telemetry::kMetricDecisions; ++d) {
      decisions[telemetry::kMetricDecisionNames[d]] = counts[d];
    }
    routes.push_back(json::object{{"route", route}, {"total", std::move(decisions)}});
  }

  json::object store = store_health(context);
  const std::uint64_t holders = context.proxy.store ? lease_holders_of(*context.proxy.store) : 1;
  const bool shared = store.at("name").as_string() != "memory";
  json::array limiters;
  const auto keys = generation.pipeline.limiter_keys();
  for (const config::LimiterConfig& configured : generation.config->limiters) {
    json::object shown{{"limiter", configured.name},
                       {"algorithm", limiter::name_of(configured.options.algorithm)},
                       {"keys", 0}};
    for (const auto& [name, count] : keys) {
      if (name == configured.name) {
        shown["keys"] = count;
      }
    }
    if (configured.lease != 0) {
      shown["lease"] = configured.lease;
      if (shared) {  // the most its keys may be overshot: lease × lease holders
        shown["overshoot_bound"] = configured.lease * holders;
      }
    }
    limiters.push_back(std::move(shown));
  }

  const telemetry::Metrics::Totals totals = metrics.totals();
  json::array upstream_errors;
  for (const auto& [upstream, counts] : totals.upstream_errors) {
    json::object errors{{"upstream", upstream}};
    for (std::size_t k = 0; k < counts.size(); ++k) {
      errors[kUpstreamErrorNames[k]] = counts[k];
    }
    upstream_errors.push_back(std::move(errors));
  }
  json::array jwks;
  for (const auto& [provider, counts] : totals.jwks_refreshes) {
    jwks.push_back(json::object{{"provider", provider}, {"ok", counts[0]}, {"failed", counts[1]}});
  }

  return {{"history", history_json(context.proxy.traffic.since(since))},
          {"routes", std::move(routes)},
          {"limiters", std::move(limiters)},
          {"store", std::move(store)},
          {"jwks", std::move(jwks)},
          {"upstream_errors", std::move(upstream_errors)},
          {"tls_handshakes",
           {{"full", totals.tls_handshakes[0]},
            {"resumed", totals.tls_handshakes[1]},
            {"failed", totals.tls_handshakes[2]}}},
          {"http2", {{"connections", totals.http2_connections}, {"goaways", totals.http2_goaways}}},
          {"connections",
           {{"open", context.proxy.connections.load()}, {"parked", context.proxy.parked.load()}}},
          {"access_log_dropped", context.proxy.access_log.dropped()},
          {"reloads", {{"succeeded", totals.reloads[0]}, {"failed", totals.reloads[1]}}},
          {"last_reload", last_reload(context)}};
}

AdminResponse stats_page(const AdminRequest& request, const live::Generation& generation,
                         const http::LoopContext& context) {
  std::uint64_t since = 0;
  if (const std::optional<std::string_view> value = pipeline::query_value(request.query, "since")) {
    const auto [end, error] = std::from_chars(value->data(), value->data() + value->size(), since);
    if (error != std::errc() || end != value->data() + value->size()) {
      return problem(request, http::status::bad_request,
                     "since: a sample number (the history's newest) was expected");
    }
  }
  AdminResponse response =
      json_response(request, http::status::ok, stats(generation, context, since));
  response.set(http::field::cache_control, "no-store");
  return response;
}

}  // namespace sluice::admin
