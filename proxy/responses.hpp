#pragma once

#include <string_view>

#include "config/proxy_config.hpp"
#include "proxy/net.hpp"
#include "proxy/pipeline.hpp"

namespace sluice::proxy {

/// The answer the proxy gives itself (SPEC §4): 429 or a limiter's status, 403, 404, 400, 431,
/// 502, 504, or a route's `respond`. Every error body is problem+json and leaks no internals.
http::response<http::string_body> own_response(const Decision& decision, unsigned version,
                                               bool keep_alive, config::LimitsHeaders headers);

/// A problem+json answer for a transport problem (400, 431, 502, 504).
http::response<http::string_body> problem_response(http::status status, unsigned version,
                                                   bool keep_alive);

/// Adds the RateLimit / RateLimit-Policy (draft-10) and X-RateLimit-* fields for the limiters
/// that applied, as `limits_headers` says.
void add_limit_headers(http::fields& fields, const Decision& decision,
                       config::LimitsHeaders headers);

/// Whole seconds, rounded up; 0 for no time at all (RateLimit's `t`, X-RateLimit-Reset).
std::uint64_t seconds_rounded_up(limiter::Duration duration) noexcept;

/// Retry-After: whole seconds, rounded up, at least 1.
std::uint64_t retry_after_seconds(limiter::Duration wait) noexcept;

}  // namespace sluice::proxy
