#include "proxy/http/responses.hpp"

#include <algorithm>
#include <cmath>
#include <iterator>
#include <string>

#include "proxy/http/relay_heads.hpp"
#include "proxy/pipeline/http_text.hpp"
#include "proxy/pipeline/wait_seconds.hpp"
#include "proxy/telemetry/json_escape.hpp"

namespace sluice::http {
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
  append(body, R"({"type":")");
  append(body, type);
  append(body, R"(","title":")");
  append(body, title);
  append(body, R"(","status":)");
  append_number(body, status);
}

/// The status line and the fields every own answer has, through Content-Length.
void open_head(OwnResponse& out, unsigned status, unsigned version, std::string_view content_type) {
  write_status_line(out.head, version, status,
                    http::obsolete_reason(static_cast<http::status>(status)));
  write_field(out.head, "Server", "sluice");
  if (is_bodiless_status(status)) {
    return;  // (configuration refuses a body for them)
  }
  write_field(out.head, "Content-Type", content_type);
  write_field(out.head, "Content-Length", out.body.size());
}

/// The limit fields, the Connection field and the blank line.
void close_head(OwnResponse& out, unsigned version, bool keep_alive,
                const pipeline::Decision* decision, config::LimitsHeaders headers) {
  if (decision != nullptr) {
    write_limit_headers(out.head, *decision, headers);
  }
  out.keep_alive = keep_alive;
  write_persistence(out.head, version, keep_alive);
  end_head(out.head);
}

void clear(OwnResponse& out) {
  out.head.clear();
  out.body_text.clear();
  out.body = {};
  out.to_head = false;
}

std::string_view view_of(const ResponseText& text) noexcept { return {text.data(), text.size()}; }

bool draft_fields(config::LimitsHeaders headers) noexcept {
  return headers == config::LimitsHeaders::draft || headers == config::LimitsHeaders::both;
}
bool legacy_fields(config::LimitsHeaders headers) noexcept {
  return headers == config::LimitsHeaders::legacy || headers == config::LimitsHeaders::both;
}

}  // namespace

bool writes_limit_headers(const pipeline::Decision& decision,
                          config::LimitsHeaders headers) noexcept {
  if (headers == config::LimitsHeaders::none) {
    return false;
  }
  const auto applied = decision.applied();
  return std::any_of(applied.begin(), applied.end(),
                     [](const pipeline::LimiterReport& report) { return !report.limiter->shadow; });
}

bool is_limit_field(std::string_view name, config::LimitsHeaders headers) noexcept {
  if (draft_fields(headers) && (pipeline::equal_ignoring_case(name, "RateLimit") ||
                                pipeline::equal_ignoring_case(name, "RateLimit-Policy"))) {
    return true;
  }
  return legacy_fields(headers) && (pipeline::equal_ignoring_case(name, "X-RateLimit-Limit") ||
                                    pipeline::equal_ignoring_case(name, "X-RateLimit-Remaining") ||
                                    pipeline::equal_ignoring_case(name, "X-RateLimit-Reset"));
}

void write_limit_headers(HeadText& head, const pipeline::Decision& decision,
                         config::LimitsHeaders headers) {
  if (!writes_limit_headers(decision, headers)) {
    return;
  }
  const pipeline::LimiterReport* tightest = nullptr;
  if (draft_fields(headers)) {
    // RateLimit-Policy: "name";q=N;w=S, …   RateLimit: "name";r=N;t=S, …
    const auto list = [&decision, &head](std::string_view name, auto write_item) {
      append(head, name);
      append(head, ": ");
      std::string_view separator;
      for (const pipeline::LimiterReport& report : decision.applied()) {
        if (!report.limiter->shadow) {
          append(head, separator);
          write_item(report);
          separator = ", ";
        }
      }
      append(head, "\r\n");
    };
    list("RateLimit-Policy", [&head](const pipeline::LimiterReport& report) {
      const Quota quota = quota_of(*report.options);
      append(head, "\"");
      append(head, report.limiter->name);
      append(head, "\";q=");
      append_number(head, quota.permits);
      if (quota.window_seconds > 0) {
        append(head, ";w=");
        append_number(head, quota.window_seconds);
      }
    });
    list("RateLimit", [&head](const pipeline::LimiterReport& report) {
      append(head, "\"");
      append(head, report.limiter->name);
      append(head, "\";r=");
      append_number(head, report.status.remaining);
      append(head, ";t=");
      append_number(head, pipeline::seconds_rounded_up(report.status.reset));
    });
  }
  if (legacy_fields(headers)) {
    for (const pipeline::LimiterReport& report : decision.applied()) {
      if (!report.limiter->shadow &&
          (tightest == nullptr || report.status.remaining < tightest->status.remaining)) {
        tightest = &report;
      }
    }
    write_field(head, "X-RateLimit-Limit", quota_of(*tightest->options).permits);
    write_field(head, "X-RateLimit-Remaining", tightest->status.remaining);
    write_field(head, "X-RateLimit-Reset", pipeline::seconds_rounded_up(tightest->status.reset));
  }
}

void write_problem(ResponseText& body, http::status status) {
  open_problem(body, static_cast<unsigned>(status), "about:blank", http::obsolete_reason(status));
  append(body, "}");
}

void problem_response(OwnResponse& out, http::status status, unsigned version, bool keep_alive,
                      const pipeline::Decision* decision, config::LimitsHeaders headers) {
  clear(out);
  write_problem(out.body_text, status);
  out.body = view_of(out.body_text);
  open_head(out, static_cast<unsigned>(status), version, "application/problem+json");
  close_head(out, version, keep_alive, decision, headers);
}

void admitted_response(OwnResponse& out, const pipeline::Decision& decision, unsigned version,
                       bool keep_alive, config::LimitsHeaders headers) {
  clear(out);
  open_head(out, 200, version, "text/plain; charset=utf-8");
  write_claim_lines(out.head, decision.auth);
  close_head(out, version, keep_alive, &decision, headers);
}

void bad_request(OwnResponse& out, unsigned version, bool keep_alive, std::string_view detail) {
  clear(out);
  open_problem(out.body_text, 400, "about:blank", "Bad Request");
  append(out.body_text, R"(,"detail":")");
  telemetry::append_json_escaped(out.body_text, detail);
  append(out.body_text, "\"}");
  out.body = view_of(out.body_text);
  open_head(out, 400, version, "application/problem+json");
  close_head(out, version, keep_alive, nullptr, config::LimitsHeaders::none);
}

void own_response(OwnResponse& out, const pipeline::Decision& decision, unsigned version,
                  bool keep_alive, config::LimitsHeaders headers) {
  clear(out);
  ResponseText& body = out.body_text;
  switch (decision.outcome) {
    case pipeline::Outcome::limited: {
      open_problem(body, decision.status,
                   "https://iana.org/assignments/http-problem-types#quota-exceeded",
                   "Too Many Requests");
      append(body, R"(,"violated-policies":[)");
      std::string_view separator;
      for (const pipeline::LimiterReport& report : decision.applied()) {
        if (!report.limiter->shadow && !report.verdict.admitted) {
          append(body, separator);
          append(body, "\"");
          telemetry::append_json_escaped(body, report.limiter->name);  // a name may hold any text
          append(body, "\"");
          separator = ",";
        }
      }
      append(body, "]}");
      out.body = view_of(body);
      open_head(out, decision.status, version, "application/problem+json");
      write_field(out.head, "Retry-After", *pipeline::retry_after_field(decision));
      break;
    }
    case pipeline::Outcome::denied: {
      // 403 (deny list, ban), or 503 when a failed store fails closed (`on_error: deny`).
      const auto status = static_cast<http::status>(decision.status);
      open_problem(body, decision.status, "about:blank", http::obsolete_reason(status));
      append(body, "}");
      out.body = view_of(body);
      open_head(out, decision.status, version, "application/problem+json");
      if (const auto retry_after = pipeline::retry_after_field(decision)) {
        write_field(out.head, "Retry-After", *retry_after);
      }
      break;
    }
    case pipeline::Outcome::no_route:
      problem_response(out, http::status::not_found, version, keep_alive, &decision, headers);
      return;
    case pipeline::Outcome::unauthorized: {
      // RFC 6750 §3: a request without a token learns the scheme; one whose token failed learns
      // that it is invalid and which check it failed (never the token itself).
      const pipeline::Authentication& auth = decision.auth;
      const std::string_view check = auth.token ? auth::name_of(auth.check) : "missing";
      open_problem(body, 401, "about:blank", "Unauthorized");
      append(body, R"(,"detail":")");
      append(body, auth.token ? "the token failed a check" : "a token is required");
      append(body, R"(","check":")");
      append(body, check);
      append(body, "\"}");
      out.body = view_of(body);
      open_head(out, 401, version, "application/problem+json");
      if (auth.token) {
        append(out.head, "WWW-Authenticate: Bearer error=\"invalid_token\", error_description=\"");
        append(out.head, check);
        append(out.head, "\"\r\n");
      } else {
        write_field(out.head, "WWW-Authenticate", "Bearer");
      }
      break;
    }
    case pipeline::Outcome::allowed:
    case pipeline::Outcome::delayed:
      out.body = decision.route->respond->body;
      open_head(out, decision.route->respond->status, version, "text/plain; charset=utf-8");
      break;
  }
  close_head(out, version, keep_alive, &decision, headers);
}

}  // namespace sluice::http
