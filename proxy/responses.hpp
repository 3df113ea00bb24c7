#pragma once

#include <fmt/format.h>

#include <string_view>

#include "config/proxy_config.hpp"
#include "proxy/net.hpp"
#include "proxy/pipeline.hpp"

namespace sluice::proxy {

/// Text for a response body, inline up to 500 bytes: an answer the proxy writes needs no heap.
using ResponseText = fmt::memory_buffer;
/// A response the proxy writes itself. Its body points at text that the caller keeps (or the
/// configuration holds) until the response is written.
using OwnResponse = http::response<http::span_body<const char>, Fields>;

/// The answer the proxy gives itself (SPEC §4): 429 or a limiter's status, 403, 404, or a
/// route's `respond`, its body written into `body`. Every error body is problem+json and leaks
/// no internals.
OwnResponse own_response(const Decision& decision, unsigned version, bool keep_alive,
                         config::LimitsHeaders headers, ResponseText& body);

/// A problem+json answer for a transport problem (400, 431, 502, 504), its body in `body`.
OwnResponse problem_response(http::status status, unsigned version, bool keep_alive,
                             ResponseText& body);

/// Writes the problem+json body for `status` (with the standard reason as its title).
void write_problem(ResponseText& body, http::status status);

/// Adds the RateLimit / RateLimit-Policy (draft-10) and X-RateLimit-* fields for the limiters
/// that applied, as `limits_headers` says.
void add_limit_headers(Fields& fields, const Decision& decision, config::LimitsHeaders headers);

/// Whole seconds, rounded up; 0 for no time at all (RateLimit's `t`, X-RateLimit-Reset).
std::uint64_t seconds_rounded_up(limiter::Duration duration) noexcept;

/// Retry-After: whole seconds, rounded up, at least 1.
std::uint64_t retry_after_seconds(limiter::Duration wait) noexcept;

}  // namespace sluice::proxy
