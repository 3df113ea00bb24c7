#pragma once

#include <span>
#include <string>
#include <string_view>

#include "proxy/pipeline/http_text.hpp"
#include "proxy/pipeline/ip_address.hpp"

namespace sluice::pipeline {

struct Header {
  std::string_view name;
  std::string_view value;
};

/// What a TLS client's certificate says, read once per connection (the `cert:` keys).
struct ClientCertificate {
  std::string subject;      ///< RFC 2253 ("CN=client-0,O=example").
  std::string san;          ///< The first DNS or URI subject alternative name; empty if none.
  std::string fingerprint;  ///< SHA-256 of the DER certificate, lower-case hex.
};

/// What the pipeline needs of a request, as views into whoever owns it: the proxy's parser or a
/// replayed log line. No copies, no Beast types.
struct RequestView {
  std::string_view method;
  std::string_view target;  ///< Path and query, as received ("/api/x?page=2").
  std::string_view host;    ///< The Host header (port included, if sent).
  std::span<const Header> headers;
  IpAddress peer;  ///< The socket's peer address.
  /// The client's certificate on a TLS listener that asked for one; null otherwise.
  const ClientCertificate* certificate = nullptr;

  std::string_view path() const noexcept { return target.substr(0, target.find('?')); }
  std::string_view query() const noexcept {
    const std::size_t mark = target.find('?');
    return mark == std::string_view::npos ? std::string_view() : target.substr(mark + 1);
  }
  /// The first header of that name (case-insensitive), or nullptr.
  const Header* find_header(std::string_view name) const noexcept {
    for (const Header& header : headers) {
      if (equal_ignoring_case(header.name, name)) {
        return &header;
      }
    }
    return nullptr;
  }
  std::string_view header(std::string_view name) const noexcept {
    const Header* found = find_header(name);
    return found != nullptr ? found->value : std::string_view();
  }
};

}  // namespace sluice::pipeline
