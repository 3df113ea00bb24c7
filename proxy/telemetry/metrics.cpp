#include "proxy/telemetry/metrics.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace sluice::telemetry {
namespace {

constexpr std::array<std::string_view, kUpstreamErrorKinds> kErrorNames{"connect", "timeout",
                                                                        "broken"};

/// A label value with `\`, `"` and newlines escaped, as the text format wants.
std::string label(std::string_view value) {
  std::string out;
  out.reserve(value.size());
  for (const char c : value) {
    if (c == '\\' || c == '"') {
      out += '\\';
      out += c;
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out += c;
    }
  }
  return out;
}

template <class Counters, class Read>
std::uint64_t sum(const std::vector<std::unique_ptr<Counters>>& loops, Read read) {
  std::uint64_t total = 0;
  for (const auto& counters : loops) {
    total += read(*counters);
  }
  return total;
}

/// A family of per-loop counters as series: per name (a route, an upstream, a provider) and per
/// one of `values`, the sum over the loops of `count(counters, index)`, as
/// `metric{first="name",second="value"} N`.
template <class Family, std::size_t N, class Count>
void write_counts(fmt::memory_buffer& out, const Family& family, std::string_view metric,
                  std::string_view first, std::string_view second,
                  const std::array<std::string_view, N>& values, Count count) {
  for (const auto& [name, loops] : family) {
    const std::string shown = label(name);
    for (std::size_t i = 0; i < N; ++i) {
      fmt::format_to(std::back_inserter(out), "{}{{{}=\"{}\",{}=\"{}\"}} {}\n", metric, first,
                     shown, second, values[i],
                     sum(loops, [&count, i](const auto& counters) { return count(counters, i); }));
    }
  }
}

/// One more fetch for `name`, that succeeded or failed.
void count_fetch(FetchCounts& counts, std::string_view name, bool succeeded) {
  auto found = counts.find(name);
  if (found == counts.end()) {
    found = counts.emplace(std::string(name), std::array<std::uint64_t, 2>{}).first;
  }
  ++found->second[succeeded ? 0 : 1];
}

/// Fetches by name and result, as `metric{key="name",result="ok"|"failed"} N`; nothing
/// without any.
void write_fetches(fmt::memory_buffer& out, const FetchCounts& counts, std::string_view metric,
                   std::string_view key, std::string_view help) {
  auto to = std::back_inserter(out);
  if (!counts.empty()) {
    fmt::format_to(to, "# HELP {} {}\n# TYPE {} counter\n", metric, help, metric);
  }
  for (const auto& [name, count] : counts) {
    const std::string shown = label(name);
    fmt::format_to(to, "{}{{{}=\"{}\",result=\"ok\"}} {}\n", metric, key, shown, count[0]);
    fmt::format_to(to, "{}{{{}=\"{}\",result=\"failed\"}} {}\n", metric, key, shown, count[1]);
  }
}

}  // namespace

void RouteCounters::observe(limiter::Duration duration) noexcept {
  const double seconds = std::chrono::duration<double>(duration).count();
  const auto bucket = static_cast<std::size_t>(
      std::lower_bound(kDurationBuckets.begin(), kDurationBuckets.end(), seconds) -
      kDurationBuckets.begin());
  buckets[bucket].add();
  duration_ns.add(static_cast<std::uint64_t>(std::max<std::int64_t>(0, duration.count())));
}

template <class Counters>
std::vector<Counters*> Metrics::series(Family<Counters>& family, std::string_view name) {
  const std::lock_guard lock(mutex_);
  auto found = std::find_if(family.begin(), family.end(),
                            [&](const auto& entry) { return entry.first == name; });
  if (found == family.end()) {
    std::vector<std::unique_ptr<Counters>> loops;
    for (std::size_t i = 0; i < loops_; ++i) {
      loops.push_back(std::make_unique<Counters>());
    }
    family.emplace_back(std::string(name), std::move(loops));
    found = std::prev(family.end());
  }
  std::vector<Counters*> pointers;
  for (const auto& counters : found->second) {
    pointers.push_back(counters.get());
  }
  return pointers;
}

std::vector<RouteCounters*> Metrics::route(std::string_view name) { return series(routes_, name); }

std::vector<UpstreamCounters*> Metrics::upstream(std::string_view url) {
  return series(upstreams_, url);
}

std::vector<JwtCounters*> Metrics::jwt(std::string_view name) {
  return series(jwt_providers_, name);
}

std::vector<CostCounters*> Metrics::cost(std::string_view name) { return series(costs_, name); }

void Metrics::count_jwks_refresh(std::string_view provider, bool succeeded) {
  const std::lock_guard lock(mutex_);
  count_fetch(jwks_refreshes_, provider, succeeded);
}

void Metrics::count_ocsp_fetch(std::string_view certificate, bool succeeded) {
  const std::lock_guard lock(mutex_);
  count_fetch(ocsp_fetches_, certificate, succeeded);
}

void Metrics::count_reload(bool succeeded) noexcept {
  (succeeded ? reloads_succeeded_ : reloads_failed_).fetch_add(1, std::memory_order_relaxed);
}

std::vector<std::pair<std::string, std::array<std::uint64_t, kMetricDecisions>>>
Metrics::route_totals() const {
  const std::lock_guard lock(mutex_);
  std::vector<std::pair<std::string, std::array<std::uint64_t, kMetricDecisions>>> totals;
  totals.reserve(routes_.size());
  for (const auto& [route, loops] : routes_) {
    auto& counts = totals.emplace_back(route, std::array<std::uint64_t, kMetricDecisions>{}).second;
    for (std::size_t d = 0; d < kMetricDecisions; ++d) {
      counts[d] = sum(loops, [d](const RouteCounters& c) { return c.decisions[d].value(); });
    }
  }
  return totals;
}

Metrics::Totals Metrics::totals() const {
  const std::lock_guard lock(mutex_);
  Totals totals;
  for (const auto& [upstream, loops] : upstreams_) {
    auto& counts = totals.upstream_errors
                       .emplace_back(upstream, std::array<std::uint64_t, kUpstreamErrorKinds>{})
                       .second;
    for (std::size_t k = 0; k < kUpstreamErrorKinds; ++k) {
      counts[k] = sum(loops, [k](const UpstreamCounters& c) { return c.errors[k].value(); });
    }
  }
  for (const auto& [provider, counts] : jwks_refreshes_) {
    totals.jwks_refreshes.emplace_back(provider, counts);
  }
  totals.reloads = {reloads_succeeded_.load(std::memory_order_relaxed),
                    reloads_failed_.load(std::memory_order_relaxed)};
  for (std::size_t i = 0; i < tls_handshakes_.size(); ++i) {
    totals.tls_handshakes[i] = tls_handshakes_[i].load(std::memory_order_relaxed);
  }
  totals.http2_connections = http2_connections_.load(std::memory_order_relaxed);
  for (const auto& goaways : http2_goaways_) {
    totals.http2_goaways += goaways.load(std::memory_order_relaxed);
  }
  return totals;
}

std::string Metrics::render(const Gauges& gauges) const {
  const std::lock_guard lock(mutex_);
  fmt::memory_buffer out;
  auto to = std::back_inserter(out);
  fmt::format_to(to,
                 "# HELP sluice_requests_total Requests by route and decision.\n"
                 "# TYPE sluice_requests_total counter\n");
  write_counts(out, routes_, "sluice_requests_total", "route", "decision", kMetricDecisionNames,
               [](const RouteCounters& c, std::size_t d) { return c.decisions[d].value(); });
  fmt::format_to(
      to,
      "# HELP sluice_request_duration_seconds Time from a request's header to the end of its "
      "response.\n# TYPE sluice_request_duration_seconds histogram\n");
  for (const auto& [route, loops] : routes_) {
    const std::string name = label(route);
    std::uint64_t cumulative = 0;
    for (std::size_t b = 0; b <= kDurationBuckets.size(); ++b) {
      cumulative += sum(loops, [b](const RouteCounters& c) { return c.buckets[b].value(); });
      if (b < kDurationBuckets.size()) {
        fmt::format_to(to, "sluice_request_duration_seconds_bucket{{route=\"{}\",le=\"{}\"}} {}\n",
                       name, kDurationBuckets[b], cumulative);
      } else {
        fmt::format_to(to,
                       "sluice_request_duration_seconds_bucket{{route=\"{}\",le=\"+Inf\"}} {}\n",
                       name, cumulative);
      }
    }
    const double seconds =
        static_cast<double>(
            sum(loops, [](const RouteCounters& c) { return c.duration_ns.value(); })) /
        1e9;
    fmt::format_to(to, "sluice_request_duration_seconds_sum{{route=\"{}\"}} {}\n", name, seconds);
    fmt::format_to(to, "sluice_request_duration_seconds_count{{route=\"{}\"}} {}\n", name,
                   cumulative);
  }
  fmt::format_to(
      to,
      "# HELP sluice_upstream_errors_total Failed upstream exchanges by upstream and kind.\n"
      "# TYPE sluice_upstream_errors_total counter\n");
  write_counts(out, upstreams_, "sluice_upstream_errors_total", "upstream", "kind", kErrorNames,
               [](const UpstreamCounters& c, std::size_t k) { return c.errors[k].value(); });
  if (!jwt_providers_.empty()) {
    fmt::format_to(to,
                   "# HELP sluice_jwt_verifications_total Tokens checked by JWT provider and "
                   "result.\n# TYPE sluice_jwt_verifications_total counter\n");
  }
  write_counts(out, jwt_providers_, "sluice_jwt_verifications_total", "provider", "result",
               kJwtResultNames,
               [](const JwtCounters& c, std::size_t r) { return c.results[r].value(); });
  if (!costs_.empty()) {
    fmt::format_to(to,
                   "# HELP sluice_cost_charged_total What responses cost, charged by limiter "
                   "(cost: response, count_if).\n# TYPE sluice_cost_charged_total counter\n");
  }
  for (const auto& [limiter, loops] : costs_) {
    fmt::format_to(to, "sluice_cost_charged_total{{limiter=\"{}\"}} {}\n", label(limiter),
                   sum(loops, [](const CostCounters& c) { return c.charged.value(); }));
  }
  if (!costs_.empty()) {
    fmt::format_to(to,
                   "# HELP sluice_cost_readings_total Responses' costs by limiter and how they "
                   "read.\n# TYPE sluice_cost_readings_total counter\n");
  }
  write_counts(out, costs_, "sluice_cost_readings_total", "limiter", "result", kCostReadingNames,
               [](const CostCounters& c, std::size_t r) { return c.readings[r].value(); });
  fmt::format_to(to,
                 "# HELP sluice_usage_requested_total Streaming requests rewritten to ask for "
                 "their usage (cost_from.include_usage).\n"
                 "# TYPE sluice_usage_requested_total counter\n"
                 "sluice_usage_requested_total {}\n",
                 usage_requested_.load(std::memory_order_relaxed));
  write_fetches(out, jwks_refreshes_, "sluice_jwks_refreshes_total", "provider",
                "Fetches of JWT providers' key sets by result.");
  write_fetches(out, ocsp_fetches_, "sluice_ocsp_fetches_total", "certificate",
                "Fetches of listener certificates' OCSP responses to staple, by result.");
  fmt::format_to(to,
                 "# HELP sluice_limiter_keys Keys each limiter tracks now.\n"
                 "# TYPE sluice_limiter_keys gauge\n");
  for (const auto& [limiter, keys] : gauges.limiter_keys) {
    fmt::format_to(to, "sluice_limiter_keys{{limiter=\"{}\"}} {}\n", label(limiter), keys);
  }
  fmt::format_to(to,
                 "# HELP sluice_store_errors_total Requests the limiter store could not "
                 "decide: they followed on_error.\n"
                 "# TYPE sluice_store_errors_total counter\n"
                 "sluice_store_errors_total{{store=\"{0}\"}} {1}\n"
                 "# HELP sluice_store_available 1 while the limiter store answers; 0 while "
                 "requests follow on_error.\n"
                 "# TYPE sluice_store_available gauge\n"
                 "sluice_store_available{{store=\"{0}\"}} {2}\n"
                 "# HELP sluice_store_cached_refusals_total Requests refused from the over-limit "
                 "cache, without a store round trip.\n"
                 "# TYPE sluice_store_cached_refusals_total counter\n"
                 "sluice_store_cached_refusals_total{{store=\"{0}\"}} {3}\n"
                 "# HELP sluice_store_calls_total Round trips to the limiter store; each carries "
                 "a batch of requests.\n"
                 "# TYPE sluice_store_calls_total counter\n"
                 "sluice_store_calls_total{{store=\"{0}\"}} {4}\n"
                 "# HELP sluice_store_call_requests_total Requests carried by those round "
                 "trips.\n"
                 "# TYPE sluice_store_call_requests_total counter\n"
                 "sluice_store_call_requests_total{{store=\"{0}\"}} {5}\n"
                 "# HELP sluice_store_refunds_total Requests taken back on a Redis Cluster "
                 "master because another master refused them.\n"
                 "# TYPE sluice_store_refunds_total counter\n"
                 "sluice_store_refunds_total{{store=\"{0}\"}} {6}\n"
                 "# HELP sluice_store_lost_settlements_total Charges settled after the response "
                 "that the store did not take (it failed, or on_error dropped them).\n"
                 "# TYPE sluice_store_lost_settlements_total counter\n"
                 "sluice_store_lost_settlements_total{{store=\"{0}\"}} {7}\n",
                 gauges.store, gauges.store_errors, gauges.store_available ? 1 : 0,
                 gauges.store_cached_refusals, gauges.store_calls, gauges.store_requests_in_calls,
                 gauges.store_refunds, gauges.store_lost_settlements);
  if (!gauges.lease_bounds.empty()) {
    fmt::format_to(to,
                   "# HELP sluice_store_lease_hits_total Requests admitted from a lease, without a "
                   "store round trip.\n"
                   "# TYPE sluice_store_lease_hits_total counter\n"
                   "sluice_store_lease_hits_total{{store=\"{}\"}} {}\n"
                   "# HELP sluice_store_lease_holders Event loops, of every replica, holding "
                   "leases on the store, as they count themselves in it.\n"
                   "# TYPE sluice_store_lease_holders gauge\n"
                   "sluice_store_lease_holders{{store=\"{}\"}} {}\n"
                   "# HELP sluice_lease_overshoot_bound Permits a leased limiter's key may admit "
                   "beyond its limit over any span, at most: lease x lease holders.\n"
                   "# TYPE sluice_lease_overshoot_bound gauge\n",
                   gauges.store, gauges.store_lease_hits, gauges.store, gauges.store_lease_holders);
    for (const auto& [limiter, bound] : gauges.lease_bounds) {
      fmt::format_to(to, "sluice_lease_overshoot_bound{{limiter=\"{}\"}} {}\n", label(limiter),
                     bound);
    }
  }
  fmt::format_to(to,
                 "# HELP sluice_config_reloads_total Configuration reloads by result.\n"
                 "# TYPE sluice_config_reloads_total counter\n"
                 "sluice_config_reloads_total{{result=\"success\"}} {}\n"
                 "sluice_config_reloads_total{{result=\"failure\"}} {}\n",
                 reloads_succeeded_.load(std::memory_order_relaxed),
                 reloads_failed_.load(std::memory_order_relaxed));
  fmt::format_to(to,
                 "# HELP sluice_admin_writes_total Writes on the admin port by action and "
                 "result.\n"
                 "# TYPE sluice_admin_writes_total counter\n");
  for (std::size_t action = 0; action < kAdminActionNames.size(); ++action) {
    for (std::size_t result = 0; result < kAdminResultNames.size(); ++result) {
      fmt::format_to(to, "sluice_admin_writes_total{{action=\"{}\",result=\"{}\"}} {}\n",
                     kAdminActionNames[action], kAdminResultNames[result],
                     admin_writes_[action][result].load(std::memory_order_relaxed));
    }
  }
  fmt::format_to(to,
                 "# HELP sluice_rls_requests_total Envoy rate-limit calls to the decision "
                 "service by result.\n"
                 "# TYPE sluice_rls_requests_total counter\n");
  for (std::size_t result = 0; result < kRlsResultNames.size(); ++result) {
    std::uint64_t total = 0;
    for (const RlsCounters& loop : rls_) {
      total += loop.results[result].value();
    }
    fmt::format_to(to, "sluice_rls_requests_total{{result=\"{}\"}} {}\n", kRlsResultNames[result],
                   total);
  }
  fmt::format_to(to,
                 "# HELP sluice_tls_handshakes_total TLS listeners' handshakes by result.\n"
                 "# TYPE sluice_tls_handshakes_total counter\n"
                 "sluice_tls_handshakes_total{{result=\"full\"}} {}\n"
                 "sluice_tls_handshakes_total{{result=\"resumed\"}} {}\n"
                 "sluice_tls_handshakes_total{{result=\"failed\"}} {}\n",
                 tls_handshakes_[0].load(std::memory_order_relaxed),
                 tls_handshakes_[1].load(std::memory_order_relaxed),
                 tls_handshakes_[2].load(std::memory_order_relaxed));
  fmt::format_to(to,
                 "# HELP sluice_http2_connections_total HTTP/2 client connections.\n"
                 "# TYPE sluice_http2_connections_total counter\n"
                 "sluice_http2_connections_total {}\n"
                 "# HELP sluice_http2_goaways_total HTTP/2 client connections the proxy ended "
                 "with GOAWAY, by error code.\n"
                 "# TYPE sluice_http2_goaways_total counter\n",
                 http2_connections_.load(std::memory_order_relaxed));
  static constexpr std::array<std::string_view, kHttp2ErrorCodes> kErrorNames = {
      "no_error",
      "protocol_error",
      "internal_error",
      "flow_control_error",
      "settings_timeout",
      "stream_closed",
      "frame_size_error",
      "refused_stream",
      "cancel",
      "compression_error",
      "connect_error",
      "enhance_your_calm",
      "inadequate_security",
      "http_1_1_required",
      "other"};
  for (std::size_t code = 0; code < kHttp2ErrorCodes; ++code) {
    if (const std::uint64_t count = http2_goaways_[code].load(std::memory_order_relaxed)) {
      fmt::format_to(to, "sluice_http2_goaways_total{{error=\"{}\"}} {}\n", kErrorNames[code],
                     count);
    }
  }
  fmt::format_to(to,
                 "# HELP sluice_open_connections Client connections open now.\n"
                 "# TYPE sluice_open_connections gauge\n"
                 "sluice_open_connections {}\n"
                 "# HELP sluice_parked_connections Client connections parked between requests: "
                 "their socket and a wait, with no buffer, coroutine or timer.\n"
                 "# TYPE sluice_parked_connections gauge\n"
                 "sluice_parked_connections {}\n"
                 "# HELP sluice_access_log_dropped_total Access log lines dropped, the oldest "
                 "first, while the log's queue was full (a slow terminal or pipe).\n"
                 "# TYPE sluice_access_log_dropped_total counter\n"
                 "sluice_access_log_dropped_total {}\n",
                 gauges.open_connections, gauges.parked_connections, gauges.access_log_dropped);
  return fmt::to_string(out);
}

}  // namespace sluice::telemetry
