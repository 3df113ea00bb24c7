#pragma once

#include <fmt/format.h>

#include <array>
#include <string_view>

#include "config/proxy_config.hpp"
#include "proxy/http/beast_http.hpp"
#include "proxy/http/header_text.hpp"
#include "proxy/pipeline/pipeline.hpp"

namespace sluice::http {

/// Text for a response body, inline up to 500 bytes.
using ResponseText = fmt::memory_buffer;

/// A response the proxy gives itself, as text: its head and its body, kept until written.
struct OwnResponse {
  HeadText head;
  ResponseText body_text;
  std::string_view body;  ///< `body_text`, or text the configuration holds.
  bool keep_alive = false;
  /// The body stays home: the answer is to HEAD, which gets the head a GET would have had,
  /// Content-Length included, and no content (RFC 9110 §9.3.2). Set after the answer is made.
  bool to_head = false;

  /// What goes on the wire after the head.
  std::string_view content() const noexcept { return to_head ? std::string_view() : body; }
  std::array<net::const_buffer, 2> buffers() const noexcept {
    const std::string_view sent = content();
    return {net::buffer(head.data(), head.size()), net::buffer(sent.data(), sent.size())};
  }
};

/// Statuses whose responses never have content, nor Content-Length: 1xx, 204 and 304 (RFC 9110
/// §6.4.1, §8.6).
constexpr bool is_bodiless_status(unsigned status) noexcept {
  return status < 200 || status == 204 || status == 304;
}

/// The answer the proxy gives itself (SPEC §4): 429 or a limiter's status, 403, 404, or a
/// route's `respond`. Every error body is problem+json and leaks no internals.
void own_response(OwnResponse& out, const pipeline::Decision& decision, unsigned version,
                  bool keep_alive, config::LimitsHeaders headers);

/// The decision service's answer to a forward-auth check whose request may pass (SPEC §11):
/// 200, no content, the limit fields, and the verified claims the route's provider sends on.
void admitted_response(OwnResponse& out, const pipeline::Decision& decision, unsigned version,
                       bool keep_alive, config::LimitsHeaders headers);

/// 400 with a problem+json `detail` saying what was wrong with the request.
void bad_request(OwnResponse& out, unsigned version, bool keep_alive, std::string_view detail);

/// A problem+json answer for a transport problem (400, 431, 502, 504); with the limit fields
/// of `decision` when it is given.
void problem_response(OwnResponse& out, http::status status, unsigned version, bool keep_alive,
                      const pipeline::Decision* decision = nullptr,
                      config::LimitsHeaders headers = config::LimitsHeaders::none);

/// Writes the problem+json body for `status` (with the standard reason as its title).
void write_problem(ResponseText& body, http::status status);

/// Whether `write_limit_headers` writes anything for this decision.
bool writes_limit_headers(const pipeline::Decision& decision,
                          config::LimitsHeaders headers) noexcept;
/// Whether `name` is a field `write_limit_headers` writes in this mode (an upstream's own field
/// of that name gives way to the proxy's).
bool is_limit_field(std::string_view name, config::LimitsHeaders headers) noexcept;
/// Writes the RateLimit / RateLimit-Policy (draft-10) and X-RateLimit-* fields for the limiters
/// that applied, as `limits_headers` says.
void write_limit_headers(HeadText& head, const pipeline::Decision& decision,
                         config::LimitsHeaders headers);

}  // namespace sluice::http
