#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

#include "proxy/http/beast_http.hpp"
#include "proxy/http/head_fields.hpp"
#include "proxy/http/header_text.hpp"
#include "proxy/http/message_parser.hpp"

namespace sluice::http {

/// A request's head as every codec hands it to the exchange: read once, by Beast from an
/// HTTP/1.1 connection (MessageParser) or by nghttp2 from an HTTP/2 stream
/// (h2::read_request_head), checked by the same rules, and never written out as text to be
/// read again. Its views stay valid while `fields` holds the request.
struct RequestHead {
  const HeadFields* fields = nullptr;  ///< Sealed; Host is the authority the request names.
  http::verb method = http::verb::unknown;
  std::string_view method_string;
  std::string_view target;  ///< In origin-form (or `*` for OPTIONS).
  unsigned version = kHttp11;
  /// The body's length as received, when known: a Content-Length field.
  std::optional<std::uint64_t> content_length;
  /// A body of unknown length: chunked in HTTP/1.1; in HTTP/2, a stream that goes on after its
  /// header block without a Content-Length. Sent on to an HTTP/1.1 upstream chunked.
  bool chunked = false;

  const HeadFields& head() const noexcept { return *fields; }
};

/// The head that `parser` has read (its header done).
inline RequestHead head_of(const RequestParser& parser) noexcept {
  const auto length = parser.content_length();
  return {.fields = &parser.head(),
          .method = parser.method(),
          .method_string = parser.method_string(),
          .target = parser.target(),
          .version = parser.version(),
          .content_length = length ? std::optional<std::uint64_t>(*length) : std::nullopt,
          .chunked = parser.chunked()};
}

}  // namespace sluice::http
