#include "proxy/responses.hpp"

#include <algorithm>
#include <cmath>
#include <string>

namespace sluice::proxy {
namespace {

using limiter::AlgorithmKind;

/// q (permits) and w (seconds) of RateLimit-Policy for a limiter.
struct Quota {
  std::uint64_t permits = 0;
  std::uint64_t window_seconds = 0;  ///< 0: no window (concurrency).
};

std::uint64_t seconds_up(double seconds) {
  return std::max<std::uint64_t>(1, static_cast<std::uint64_t>(std::ceil(seconds - 1e-9)));
}

Quota quota_of(const limiter::LimiterOptions& options) {
  const double per_second = options.rate.per_second();
  switch (options.algorithm) {
    case AlgorithmKind::fixed_window:
    case AlgorithmKind::sliding_log:
    case AlgorithmKind::sliding_window:
    case AlgorithmKind::wheel:
      return {options.limit, seconds_up(static_cast<double>(options.window.count()) / 1e9)};
    case AlgorithmKind::token_bucket: {
      if (options.warmup > limiter::Duration::zero()) {
        return {static_cast<std::uint64_t>(std::max(1.0, per_second)), 1};
      }
      const double burst = options.burst.value_or(std::max(1.0, per_second));
      return {static_cast<std::uint64_t>(burst), seconds_up(burst / per_second)};
    }
    case AlgorithmKind::leaky_bucket: {
      const double room = options.burst.value_or(0) + 1;
      return {static_cast<std::uint64_t>(room), seconds_up(room / per_second)};
    }
    case AlgorithmKind::concurrency:
      return {options.limit, 0};
  }
  return {};
}

std::string problem_body(unsigned status, std::string_view type, std::string_view title,
                         std::string_view extra = {}) {
  std::string body = "{\"type\":\"";
  body.append(type).append("\",\"title\":\"").append(title);
  body.append("\",\"status\":").append(std::to_string(status));
  body.append(extra).append("}");
  return body;
}

http::response<http::string_body> make(http::status status, unsigned version, bool keep_alive,
                                       std::string body, std::string_view content_type) {
  http::response<http::string_body> response{status, version};
  response.set(http::field::server, "sluice");
  response.set(http::field::content_type, content_type);
  response.body() = std::move(body);
  response.keep_alive(keep_alive);
  response.prepare_payload();
  return response;
}

}  // namespace

std::uint64_t seconds_rounded_up(limiter::Duration duration) noexcept {
  return duration <= limiter::Duration::zero()
             ? 0
             : static_cast<std::uint64_t>((duration.count() + 999'999'999) / 1'000'000'000);
}

std::uint64_t retry_after_seconds(limiter::Duration wait) noexcept {
  if (wait <= limiter::Duration::zero() || wait == limiter::Duration::max()) {
    return 1;
  }
  return std::max<std::uint64_t>(1, seconds_rounded_up(wait));
}

void add_limit_headers(http::fields& fields, const Decision& decision,
                       config::LimitsHeaders headers) {
  if (headers == config::LimitsHeaders::none || decision.report_count == 0) {
    return;
  }
  const LimiterReport* tightest = nullptr;
  std::string policy;
  std::string state;
  for (const LimiterReport& report : decision.applied()) {
    if (report.limiter->shadow) {
      continue;
    }
    const Quota quota = quota_of(report.limiter->options);
    const std::string name = "\"" + report.limiter->name + "\"";
    policy += (policy.empty() ? "" : ", ") + name + ";q=" + std::to_string(quota.permits);
    if (quota.window_seconds > 0) {
      policy += ";w=" + std::to_string(quota.window_seconds);
    }
    state += (state.empty() ? "" : ", ") + name + ";r=" + std::to_string(report.status.remaining) +
             ";t=" + std::to_string(seconds_rounded_up(report.status.reset));
    if (tightest == nullptr || report.status.remaining < tightest->status.remaining) {
      tightest = &report;
    }
  }
  if (tightest == nullptr) {
    return;
  }
  if (headers == config::LimitsHeaders::draft || headers == config::LimitsHeaders::both) {
    fields.set("RateLimit-Policy", policy);
    fields.set("RateLimit", state);
  }
  if (headers == config::LimitsHeaders::legacy || headers == config::LimitsHeaders::both) {
    fields.set("X-RateLimit-Limit", std::to_string(quota_of(tightest->limiter->options).permits));
    fields.set("X-RateLimit-Remaining", std::to_string(tightest->status.remaining));
    fields.set("X-RateLimit-Reset", std::to_string(seconds_rounded_up(tightest->status.reset)));
  }
}

http::response<http::string_body> problem_response(http::status status, unsigned version,
                                                   bool keep_alive) {
  const unsigned code = static_cast<unsigned>(status);
  return make(status, version, keep_alive,
              problem_body(code, "about:blank", std::string(http::obsolete_reason(status))),
              "application/problem+json");
}

http::response<http::string_body> own_response(const Decision& decision, unsigned version,
                                               bool keep_alive, config::LimitsHeaders headers) {
  http::response<http::string_body> response;
  switch (decision.outcome) {
    case Outcome::limited: {
      std::string violated;
      for (const LimiterReport& report : decision.applied()) {
        if (!report.limiter->shadow && !report.verdict.admitted) {
          violated += (violated.empty() ? "\"" : ",\"") + report.limiter->name + "\"";
        }
      }
      response =
          make(static_cast<http::status>(decision.status), version, keep_alive,
               problem_body(decision.status,
                            "https://iana.org/assignments/http-problem-types#quota-exceeded",
                            "Too Many Requests", ",\"violated-policies\":[" + violated + "]"),
               "application/problem+json");
      response.set(http::field::retry_after,
                   std::to_string(retry_after_seconds(decision.retry_after)));
      break;
    }
    case Outcome::denied:
      response = make(http::status::forbidden, version, keep_alive,
                      problem_body(403, "about:blank", "Forbidden"), "application/problem+json");
      if (decision.banned) {
        response.set(http::field::retry_after,
                     std::to_string(retry_after_seconds(decision.retry_after)));
      }
      break;
    case Outcome::no_route:
      response = problem_response(http::status::not_found, version, keep_alive);
      break;
    case Outcome::allowed:
    case Outcome::delayed:
      response = make(static_cast<http::status>(decision.route->respond->status), version,
                      keep_alive, decision.route->respond->body, "text/plain; charset=utf-8");
      break;
  }
  add_limit_headers(response.base(), decision, headers);
  return response;
}

}  // namespace sluice::proxy
