#include "proxy/responses.hpp"

#include <algorithm>
#include <cmath>
#include <iterator>
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

/// `{"type":…,"title":…,"status":N`: the members every problem+json body has; the caller adds
/// any others and the closing brace.
void open_problem(ResponseText& body, unsigned status, std::string_view type,
                  std::string_view title) {
  fmt::format_to(std::back_inserter(body), R"({{"type":"{}","title":"{}","status":{})", type, title,
                 status);
}

void append(ResponseText& body, std::string_view text) { body.append(text); }

OwnResponse make(http::status status, unsigned version, bool keep_alive, std::string_view body,
                 std::string_view content_type) {
  OwnResponse response{status, version};
  response.set(http::field::server, "sluice");
  response.set(http::field::content_type, content_type);
  response.body() = {body.data(), body.size()};
  response.keep_alive(keep_alive);
  response.prepare_payload();
  return response;
}

std::string_view view_of(const ResponseText& text) noexcept { return {text.data(), text.size()}; }

template <class Name>
void set_number(Fields& fields, Name name, std::uint64_t value) {
  const fmt::format_int text(value);
  fields.set(name, std::string_view(text.data(), text.size()));
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

void add_limit_headers(Fields& fields, const Decision& decision, config::LimitsHeaders headers) {
  if (headers == config::LimitsHeaders::none || decision.report_count == 0) {
    return;
  }
  const LimiterReport* tightest = nullptr;
  fmt::memory_buffer policy;
  fmt::memory_buffer state;
  for (const LimiterReport& report : decision.applied()) {
    if (report.limiter->shadow) {
      continue;
    }
    const Quota quota = quota_of(report.limiter->options);
    const std::string_view separator = tightest == nullptr ? "" : ", ";
    fmt::format_to(std::back_inserter(policy), R"({}"{}";q={})", separator, report.limiter->name,
                   quota.permits);
    if (quota.window_seconds > 0) {
      fmt::format_to(std::back_inserter(policy), ";w={}", quota.window_seconds);
    }
    fmt::format_to(std::back_inserter(state), R"({}"{}";r={};t={})", separator,
                   report.limiter->name, report.status.remaining,
                   seconds_rounded_up(report.status.reset));
    if (tightest == nullptr || report.status.remaining < tightest->status.remaining) {
      tightest = &report;
    }
  }
  if (tightest == nullptr) {
    return;
  }
  if (headers == config::LimitsHeaders::draft || headers == config::LimitsHeaders::both) {
    fields.set("RateLimit-Policy", view_of(policy));
    fields.set("RateLimit", view_of(state));
  }
  if (headers == config::LimitsHeaders::legacy || headers == config::LimitsHeaders::both) {
    set_number(fields, std::string_view("X-RateLimit-Limit"),
               quota_of(tightest->limiter->options).permits);
    set_number(fields, std::string_view("X-RateLimit-Remaining"), tightest->status.remaining);
    set_number(fields, std::string_view("X-RateLimit-Reset"),
               seconds_rounded_up(tightest->status.reset));
  }
}

void write_problem(ResponseText& body, http::status status) {
  open_problem(body, static_cast<unsigned>(status), "about:blank", http::obsolete_reason(status));
  append(body, "}");
}

OwnResponse problem_response(http::status status, unsigned version, bool keep_alive,
                             ResponseText& body) {
  write_problem(body, status);
  return make(status, version, keep_alive, view_of(body), "application/problem+json");
}

OwnResponse own_response(const Decision& decision, unsigned version, bool keep_alive,
                         config::LimitsHeaders headers, ResponseText& body) {
  OwnResponse response;
  switch (decision.outcome) {
    case Outcome::limited: {
      open_problem(body, decision.status,
                   "https://iana.org/assignments/http-problem-types#quota-exceeded",
                   "Too Many Requests");
      append(body, R"(,"violated-policies":[)");
      std::string_view separator;
      for (const LimiterReport& report : decision.applied()) {
        if (!report.limiter->shadow && !report.verdict.admitted) {
          fmt::format_to(std::back_inserter(body), R"({}"{}")", separator, report.limiter->name);
          separator = ",";
        }
      }
      append(body, "]}");
      response = make(static_cast<http::status>(decision.status), version, keep_alive,
                      view_of(body), "application/problem+json");
      set_number(response.base(), http::field::retry_after,
                 retry_after_seconds(decision.retry_after));
      break;
    }
    case Outcome::denied:
      open_problem(body, 403, "about:blank", "Forbidden");
      append(body, "}");
      response = make(http::status::forbidden, version, keep_alive, view_of(body),
                      "application/problem+json");
      if (decision.banned) {
        set_number(response.base(), http::field::retry_after,
                   retry_after_seconds(decision.retry_after));
      }
      break;
    case Outcome::no_route:
      response = problem_response(http::status::not_found, version, keep_alive, body);
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
