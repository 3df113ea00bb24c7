#include "proxy/http/accounting.hpp"

#include <algorithm>
#include <array>
#include <chrono>
#include <string>

namespace sluice::http {
namespace {

telemetry::MetricDecision metric_decision(pipeline::Outcome outcome) noexcept {
  switch (outcome) {
    case pipeline::Outcome::allowed:
      return telemetry::MetricDecision::allowed;
    case pipeline::Outcome::delayed:
      return telemetry::MetricDecision::delayed;
    case pipeline::Outcome::limited:
      return telemetry::MetricDecision::limited;
    case pipeline::Outcome::denied:
      return telemetry::MetricDecision::denied;
    case pipeline::Outcome::no_route:
      return telemetry::MetricDecision::no_route;
    case pipeline::Outcome::unauthorized:
      return telemetry::MetricDecision::unauthorized;
  }
  return telemetry::MetricDecision::no_route;
}

/// The `result` of sluice_jwt_verifications_total for a request's token.
std::size_t jwt_result(const pipeline::Authentication& auth) noexcept {
  static_assert(static_cast<std::size_t>(auth::JwtCheck::audience) + 1 == telemetry::kJwtCached,
                "kJwtResultNames lists JwtCheck's values, in order, then cached and missing");
  if (!auth.token) {
    return telemetry::kJwtMissing;
  }
  return auth.cached ? telemetry::kJwtCached : static_cast<std::size_t>(auth.check);
}

telemetry::UpstreamErrorKind error_kind(UpstreamFailure failure) noexcept {
  return failure == UpstreamFailure::connect   ? telemetry::UpstreamErrorKind::connect
         : failure == UpstreamFailure::timeout ? telemetry::UpstreamErrorKind::timeout
                                               : telemetry::UpstreamErrorKind::broken;
}

}  // namespace

void account(const LoopContext& loop, const Exchange& exchange, unsigned status,
             const RelayOutcome* relayed) {
  const auto total = std::chrono::steady_clock::now() - exchange.started;
  const pipeline::Decision& decision = exchange.decision;
  const live::Generation& generation = exchange.generation;
  telemetry::RouteCounters& counters = generation.counters_for(decision.route, loop.index);
  counters.count(metric_decision(decision.outcome));
  for (const pipeline::LimiterReport& report : decision.applied()) {
    if (report.limiter->shadow && !report.verdict.admitted) {
      counters.count(telemetry::MetricDecision::shadow_limited);
      break;
    }
  }
  counters.observe(total);
  if (decision.auth.provider != nullptr) {
    generation.jwt_counters_for(*decision.auth.provider, loop.index)
        .results[jwt_result(decision.auth)]
        .add();
  }
  if (relayed && relayed->failure != UpstreamFailure::none) {
    generation.upstream_counters_for(*decision.route, loop.index)
        .count(error_kind(relayed->failure));
  }
  const config::ProxyConfig& config = exchange.config();
  if (!config.log.access) {
    return;
  }
  std::array<char, 48> client;  // the longest IPv6 text fits
  const std::string text = decision.client.to_string();
  const std::size_t length = std::min(text.size(), client.size());
  std::copy_n(text.begin(), length, client.begin());
  const std::uint64_t key = decision.report_count > 0 ? decision.reports[0].key : 0;
  // A forward-auth check is logged as the request it describes.
  std::string_view method = exchange.request.method_string;
  std::string_view target = exchange.request.target;
  if (const DescribedRequest* described = exchange.described;
      described != nullptr && described->problem.empty()) {
    method = described->method;
    target = described->target;
  }
  loop.proxy.access_log.write(
      config.log.format,
      telemetry::AccessRecord{.client = std::string_view(client.data(), length),
                              .method = method,
                              .target = target,
                              .secret_query = generation.secret_query,
                              .route = decision.route ? std::string_view(decision.route->name) : "",
                              .decision = metric_decision(decision.outcome),
                              .status = status,
                              .key_hash = key,
                              .upstream = relayed ? relayed->upstream_time : limiter::Duration{},
                              .total = total,
                              .cost = exchange.charged_cost,
                              .cost_problem = exchange.cost_problem});
}

}  // namespace sluice::http
