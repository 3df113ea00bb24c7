#pragma once

#include <string>
#include <string_view>

#include "config/proxy_config.hpp"
#include "proxy/io/net.hpp"
#include "proxy/tls/contexts.hpp"

namespace sluice::http {

/// One GET that sluice makes for itself, off the request path: a JWT provider's key set, an
/// OCSP responder's answer.
struct FetchRequest {
  std::string url;
  std::string_view accept;     ///< The Accept field.
  std::size_t body_limit;      ///< The largest body taken.
  std::string_view too_large;  ///< The error for a larger one: "the key set is larger than 1 MiB".
};

/// The body of a 200, or why there is none.
struct Fetched {
  std::string body;
  std::string
      error;  ///< "HTTP 503", "cannot connect: ...", "TLS handshake failed: ..."; empty: ok.
};

/// Fetches `request.url` with one HTTP/1.1 GET (`Connection: close`): over TLS for https://,
/// verified as the https:// upstreams are (`context`: the upstream TLS context, `tls`:
/// `upstream_tls`), or in cleartext for http://. Connection, TLS and answer all within `timeout`.
io::Awaitable<Fetched> fetch(FetchRequest request, tls::Context* context,
                             const config::UpstreamTls& tls, io::Duration timeout);

}  // namespace sluice::http
