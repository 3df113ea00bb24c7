#pragma once

#include <boost/asio/ssl/context.hpp>
#include <memory>
#include <string>
#include <vector>

#include "config/proxy_config.hpp"

namespace sluice::tls {

using Context = boost::asio::ssl::context;
class OcspFetch;  // tls/ocsp_fetch.hpp

/// The TLS contexts a configuration asks for, built from its certificate files: one per TLS
/// listener, and one for its https:// upstreams. Built at start, by `sluice check` and on every
/// reload (a reload reads the files again: that is how certificates rotate). Connections hold
/// their context while they live, so a reload never changes an open connection.
struct Contexts {
  std::vector<std::shared_ptr<Context>> listeners;  ///< By listener index; null: cleartext.
  std::shared_ptr<Context> upstream;                ///< Null without an https:// upstream.
  /// What the listeners ask their certificates' OCSP responders (tls/ocsp_fetch.hpp); the
  /// refresher fetches them, the contexts staple the answers.
  std::vector<std::shared_ptr<OcspFetch>> ocsp_fetches;
  /// What is worth a warning, not an error: a certificate that names an OCSP responder but
  /// whose file lacks the issuer to ask it about.
  std::vector<std::string> warnings;
};

/// Reads every certificate and key `config` names. Throws config::ConfigError naming, for
/// each problem, where the config names the file, the file and the reason: unreadable, not
/// PEM, expired or not yet valid, a key that does not match its certificate.
std::shared_ptr<const Contexts> make_contexts(const config::ProxyConfig& config);

/// The ALPN protocols a TLS listener accepts, in OpenSSL's wire format, the preferred first:
/// with HTTP/2 (`http2.enabled`), and without.
inline constexpr std::string_view kListenerProtocolsWithH2{"\x02h2\x08http/1.1", 12};
inline constexpr std::string_view kListenerProtocols{"\x08http/1.1", 9};

/// Whether ALPN chose HTTP/2 for this connection.
bool alpn_chose_h2(const SSL* connection) noexcept;

}  // namespace sluice::tls
