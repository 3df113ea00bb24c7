#include "proxy/http/relay_heads.hpp"

#include <fmt/format.h>

#include <array>
#include <iterator>
#include <random>

#include "proxy/auth/claims.hpp"
#include "proxy/http/message_syntax.hpp"
#include "proxy/http/responses.hpp"
#include "proxy/pipeline/http_text.hpp"

namespace sluice::http {
namespace {

/// The connection options of a message: the names listed in its Connection fields, all of them
/// (RFC 9110 §7.6.1; a field may be repeated, §5.3).
class ConnectionOptions {
 public:
  explicit ConnectionOptions(const HeadFields& fields) noexcept : fields_(fields) {
    while (first_ < fields.size() && fields.id(first_) != http::field::connection) {
      ++first_;
    }
  }

  bool names(std::string_view name) const noexcept {
    for (std::size_t index = first_; index < fields_.size(); ++index) {
      if (fields_.id(index) == http::field::connection && lists(fields_.at(index).value, name)) {
        return true;
      }
    }
    return false;
  }

 private:
  static bool lists(std::string_view options, std::string_view name) noexcept {
    for (std::size_t start = 0; start < options.size();) {
      const std::size_t comma = std::min(options.find(',', start), options.size());
      if (pipeline::equal_ignoring_case(
              pipeline::trim_whitespace(options.substr(start, comma - start)), name)) {
        return true;
      }
      start = comma + 1;
    }
    return false;
  }

  const HeadFields& fields_;
  std::size_t first_ = 0;  ///< The first Connection field.
};

/// Fields not forwarded as received: those that belong to one connection (RFC 9110 §7.6.1) and
/// those its Connection fields name, and the framing (Content-Length, Transfer-Encoding), which
/// the proxy writes itself. A connection option cannot remove Host.
bool dropped(http::field field, std::string_view name, const ConnectionOptions& options) {
  switch (field) {
    case http::field::connection:
    case http::field::keep_alive:
    case http::field::proxy_connection:
    case http::field::proxy_authenticate:
    case http::field::proxy_authorization:
    case http::field::te:
    case http::field::trailer:
    case http::field::transfer_encoding:
    case http::field::upgrade:
    case http::field::content_length:
      return true;
    case http::field::host:
      return false;
    default:
      return options.names(name);
  }
}

using RequestId = std::array<char, 32>;

/// 64 random bits per call: splitmix64 over a per-thread state seeded from the system's entropy.
/// Cheap enough for every request (the state needs no thread_local initialization guard); good
/// for telling requests apart in logs, not for secrets.
std::uint64_t next_random() {
  thread_local std::uint64_t state = 0;
  if (state == 0) {
    std::random_device entropy;
    state = (std::uint64_t{entropy()} << 32 | entropy()) | 1;
  }
  state += 0x9e3779b97f4a7c15;
  std::uint64_t z = state;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9;
  z = (z ^ (z >> 27)) * 0x94d049bb133111eb;
  return z ^ (z >> 31);
}

RequestId new_request_id() {
  static constexpr char kHex[] = "0123456789abcdef";
  RequestId id;
  for (std::size_t i = 0; i < id.size(); i += 16) {
    std::uint64_t bits = next_random();
    for (std::size_t j = 0; j < 16; ++j, bits >>= 4) {
      id[i + j] = kHex[bits & 0xf];
    }
  }
  return id;
}

bool is_forwarding_field(std::string_view name) noexcept {
  return pipeline::equal_ignoring_case(name, "X-Forwarded-For") ||
         pipeline::equal_ignoring_case(name, "X-Forwarded-Proto") ||
         pipeline::equal_ignoring_case(name, "X-Forwarded-Host");
}

/// Whether the route's provider sends a verified claim in a field of this name: the client's
/// own copy is never forwarded (SPEC §8).
bool claim_field(const pipeline::Authentication& auth, std::string_view name) noexcept {
  if (auth.provider == nullptr) {
    return false;
  }
  for (const auto& [claim, field] : auth.provider->claims_to_headers) {
    if (pipeline::equal_ignoring_case(field, name)) {
      return true;
    }
  }
  return false;
}

/// The verified claims the route's provider sends upstream, each one that the token holds as
/// text that a field value may carry.
template <class Out>
void write_claim_fields(const pipeline::Authentication& auth, Out& out) {
  if (auth.provider == nullptr || auth.identity == nullptr) {
    return;
  }
  thread_local std::string text;  // keeps its capacity: no allocation per request
  for (const auto& [claim, field] : auth.provider->claims_to_headers) {
    text.clear();
    const boost::json::value* value = auth::find_claim(auth.identity->claims, claim);
    if (value != nullptr && auth::append_claim_text(*value, text) &&
        syntax::valid_field_value(text)) {
      out.field(field, text);
    }
  }
}

/// write_upstream_head for either kind of HeadOut: instantiated for HeadTextOut (final, so its
/// calls are direct and inlined, on the hot path) and for HeadOut (virtual, for HTTP/2).
template <class Out>
void write_upstream_into(const RequestHead& request, const pipeline::Authentication& auth,
                         std::string_view client_address, bool secure, bool upgrade, Out& out) {
  const HeadFields& fields = request.head();
  const std::string_view host = fields.value_of(http::field::host);
  out.request(request.method_string, request.target, pipeline::trim_whitespace(host));
  const ConnectionOptions options(fields);
  bool request_id = false;
  for (std::size_t index = 0; index < fields.size(); ++index) {
    const http::field id = fields.id(index);
    const pipeline::Header& field = fields.at(index);
    if (dropped(id, field.name, options) || id == http::field::expect ||
        is_forwarding_field(field.name) || claim_field(auth, field.name)) {
      continue;
    }
    request_id = request_id || pipeline::equal_ignoring_case(field.name, "X-Request-Id");
    out.field(field.name, field.value);
  }
  if (const std::string_view forwarded_for = fields.value_of("X-Forwarded-For");
      forwarded_for.empty()) {
    out.field("X-Forwarded-For", client_address);
  } else {
    fmt::basic_memory_buffer<char, 256> joined;
    fmt::format_to(std::back_inserter(joined), "{}, {}", forwarded_for, client_address);
    out.field("X-Forwarded-For", std::string_view(joined.data(), joined.size()));
  }
  out.field("X-Forwarded-Proto", secure ? "https" : "http");
  if (!host.empty()) {
    out.field("X-Forwarded-Host", host);
  }
  write_claim_fields(auth, out);
  if (!request_id) {
    const RequestId id = new_request_id();
    out.field("X-Request-Id", std::string_view(id.data(), id.size()));
  }
  if (request.chunked) {
    out.field("Transfer-Encoding", "chunked");
  } else if (request.content_length) {
    const fmt::format_int length(*request.content_length);
    out.field("Content-Length", std::string_view(length.data(), length.size()));
  }
  if (upgrade) {
    out.field("Upgrade", fields.value_of(http::field::upgrade));
    out.field("Connection", "upgrade");
  }
  out.end();
}

/// write_client_head for either kind of HeadOut (as write_upstream_into).
template <class Out>
void write_client_into(const ResponseParser& response, unsigned version, ClientFraming framing,
                       bool keep_alive, bool switching, const pipeline::Decision& decision,
                       config::LimitsHeaders limits_headers, Out& out) {
  const std::string_view reason = response.reason();
  out.response(
      version, response.status(),
      reason.empty() ? std::string_view(http::obsolete_reason(response.result())) : reason);
  const HeadFields& fields = response.head();
  const ConnectionOptions options(fields);
  const bool limits = writes_limit_headers(decision, limits_headers);
  for (std::size_t index = 0; index < fields.size(); ++index) {
    const http::field id = fields.id(index);
    const pipeline::Header& field = fields.at(index);
    if ((id == http::field::transfer_encoding && framing.codings) ||
        !(dropped(id, field.name, options) ||
          (limits && is_limit_field(field.name, limits_headers)))) {
      out.field(field.name, field.value);
    }
  }
  HeadText own;  // the proxy's own lines, inline: no heap
  write_limit_headers(own, decision, limits_headers);
  if (switching) {
    write_field(own, "Upgrade", fields.value_of(http::field::upgrade));
    append(own, "Connection: upgrade\r\n");
  } else {
    if (framing.chunked && !framing.codings) {
      append(own, "Transfer-Encoding: chunked\r\n");
    } else if (framing.length) {
      write_field(own, "Content-Length", *framing.length);
    }
    write_persistence(own, version, keep_alive);
  }
  out.lines(std::string_view(own.data(), own.size()));
  out.end();
}

}  // namespace

void write_upstream_head(const RequestHead& request, const pipeline::Authentication& auth,
                         std::string_view client_address, bool secure, bool upgrade, HeadOut& out) {
  write_upstream_into(request, auth, client_address, secure, upgrade, out);
}

void write_upstream_head(const RequestHead& request, const pipeline::Authentication& auth,
                         std::string_view client_address, bool secure, bool upgrade,
                         HeadText& head) {
  HeadTextOut out(head);
  write_upstream_into(request, auth, client_address, secure, upgrade, out);
}

void write_client_head(const ResponseParser& response, unsigned version, ClientFraming framing,
                       bool keep_alive, bool switching, const pipeline::Decision& decision,
                       config::LimitsHeaders limits_headers, HeadOut& out) {
  write_client_into(response, version, framing, keep_alive, switching, decision, limits_headers,
                    out);
}

void write_client_head(const ResponseParser& response, unsigned version, ClientFraming framing,
                       bool keep_alive, bool switching, const pipeline::Decision& decision,
                       config::LimitsHeaders limits_headers, HeadText& head) {
  HeadTextOut out(head);
  write_client_into(response, version, framing, keep_alive, switching, decision, limits_headers,
                    out);
}

void write_claim_lines(HeadText& head, const pipeline::Authentication& auth) {
  HeadTextOut out(head);
  write_claim_fields(auth, out);
}

bool idempotent(http::verb method) noexcept {
  switch (method) {
    case http::verb::get:
    case http::verb::head:
    case http::verb::options:
    case http::verb::trace:
    case http::verb::put:
    case http::verb::delete_:
      return true;
    default:
      return false;
  }
}

bool expects_continue(const RequestHead& request) {
  return request.version >= kHttp11 &&
         pipeline::equal_ignoring_case(
             pipeline::trim_whitespace(request.head().value_of(http::field::expect)),
             "100-continue");
}

}  // namespace sluice::http
