#pragma once

#include <optional>
#include <string>

#include "config/proxy_config.hpp"
#include "proxy/auth/key_set.hpp"
#include "proxy/io/net.hpp"
#include "proxy/live/generation.hpp"
#include "proxy/tls/contexts.hpp"

namespace sluice::http {

/// How long one fetch of a key set may take, connection and TLS included.
inline constexpr io::Duration kJwksFetchTimeout = std::chrono::seconds(10);

/// A fetched JWK Set, or why there is none.
struct JwksFetched {
  std::optional<auth::KeySet> keys;
  std::string
      error;  ///< "HTTP 503", "certificate verify failed: ...", "the kid ... names two keys"
};

/// Fetches a JWK Set (SPEC §8) with one HTTP/1.1 GET: over TLS for https://, verified as the
/// https:// upstreams are (`context`: the upstream TLS context, `tls`: `upstream_tls`), or in
/// cleartext for http:// (which the configuration allows on loopback only). A 200 with a body
/// of at most 1 MiB that is a usable key set, all within `timeout`.
io::Awaitable<JwksFetched> fetch_jwks(std::string url, tls::Context* context,
                                      const config::UpstreamTls& tls, io::Duration timeout);

/// The same on the calling thread, blocking: at start and on a reload, before serving.
JwksFetched fetch_jwks_now(const std::string& url, tls::Context* context,
                           const config::UpstreamTls& tls, io::Duration timeout);

/// fetch_jwks_now as a Generation takes it: at start and on a reload, a configuration's key sets
/// are fetched before it serves.
live::KeySetFetch blocking_jwks_fetch();

}  // namespace sluice::http
