#include "proxy/tls/contexts.hpp"

#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>

#include "proxy/tls/ocsp_fetch.hpp"
#include "proxy/tls/ocsp_staple.hpp"
#include "proxy/tls/staple_slot.hpp"
#include "proxy/tls/ticket_keys.hpp"

namespace sluice::tls {
namespace {

/// Problems found while building, each where the config names its file.
class Problems {
 public:
  void add(config::Location at, std::string message) { list_.push_back({at, std::move(message)}); }
  bool empty() const noexcept { return list_.empty(); }
  std::vector<config::Diagnostic>& list() noexcept { return list_; }

 private:
  std::vector<config::Diagnostic> list_;
};

/// OpenSSL's reason for the last failure, its error queue emptied.
std::string openssl_reason() {
  const unsigned long code = ERR_peek_last_error();
  const char* reason = code == 0 ? nullptr : ERR_reason_error_string(code);
  ERR_clear_error();
  return reason != nullptr ? reason : "unknown OpenSSL error";
}

/// Whether `path` can be opened for reading, with the system's reason when not.
bool readable(const std::string& path, std::string& why) {
  std::FILE* file = std::fopen(path.c_str(), "rb");
  if (file == nullptr) {
    why = std::strerror(errno);
    return false;
  }
  std::fclose(file);
  return true;
}

std::string time_text(const ASN1_TIME* time) {
  BIO* out = BIO_new(BIO_s_mem());
  ASN1_TIME_print(out, time);
  std::string text(BIO_ctrl_pending(out), '\0');
  const int read = BIO_read(out, text.data(), static_cast<int>(text.size()));
  text.resize(static_cast<std::size_t>(std::max(read, 0)));
  BIO_free(out);
  return text;
}

/// The private key in a PEM file, or null.
EVP_PKEY* read_private_key(const std::string& path) {
  BIO* file = BIO_new_file(path.c_str(), "r");
  if (file == nullptr) {
    return nullptr;
  }
  EVP_PKEY* key = PEM_read_bio_PrivateKey(file, nullptr, nullptr, nullptr);
  BIO_free(file);
  return key;
}

/// A certificate chain and its key, checked: readable, PEM, valid now, and matching.
/// `cert_at`, `key_at`: where the config names them.
bool use_certificate(SSL_CTX* context, const std::string& path, const std::string& cert,
                     config::Location cert_at, const std::string& key, config::Location key_at,
                     Problems& problems) {
  std::string why;
  if (!readable(cert, why)) {
    problems.add(cert_at, path + ".cert: cannot read " + cert + ": " + why);
    return false;
  }
  if (SSL_CTX_use_certificate_chain_file(context, cert.c_str()) != 1) {
    problems.add(cert_at,
                 path + ".cert: " + cert + " is not a PEM certificate chain: " + openssl_reason());
    return false;
  }
  X509* leaf = SSL_CTX_get0_certificate(context);
  if (X509_cmp_current_time(X509_get0_notAfter(leaf)) < 0) {
    problems.add(cert_at,
                 path + ".cert: " + cert + " expired on " + time_text(X509_get0_notAfter(leaf)));
    return false;
  }
  if (X509_cmp_current_time(X509_get0_notBefore(leaf)) > 0) {
    problems.add(cert_at, path + ".cert: " + cert + " is not valid before " +
                              time_text(X509_get0_notBefore(leaf)));
    return false;
  }
  if (!readable(key, why)) {
    problems.add(key_at, path + ".key: cannot read " + key + ": " + why);
    return false;
  }
  EVP_PKEY* private_key = read_private_key(key);
  if (private_key == nullptr) {
    problems.add(key_at, path + ".key: " + key + " is not a PEM private key: " + openssl_reason());
    return false;
  }
  const bool matches = X509_check_private_key(leaf, private_key) == 1;
  const bool used = matches && SSL_CTX_use_PrivateKey(context, private_key) == 1;
  EVP_PKEY_free(private_key);
  if (!matches) {
    ERR_clear_error();
    problems.add(key_at, path + ".key: " + key + " does not match the certificate in " + cert);
    return false;
  }
  if (!used) {
    problems.add(key_at, path + ".key: " + key + " cannot be used: " + openssl_reason());
    return false;
  }
  return true;
}

/// Picks the first of the listener's protocols (`accepted`, a std::string_view in ALPN's wire
/// format) that the client offers: h2 before http/1.1. A client that offers none of them goes
/// on without ALPN, as before it existed, and speaks HTTP/1.1.
int select_protocol(SSL*, const unsigned char** out, unsigned char* out_length,
                    const unsigned char* offered, unsigned int offered_length, void* accepted) {
  const auto& protocols = *static_cast<const std::string_view*>(accepted);
  unsigned char* chosen = nullptr;
  if (SSL_select_next_proto(&chosen, out_length,
                            reinterpret_cast<const unsigned char*>(protocols.data()),
                            static_cast<unsigned>(protocols.size()), offered,
                            offered_length) != OPENSSL_NPN_NEGOTIATED) {
    return SSL_TLSEXT_ERR_NOACK;
  }
  *out = chosen;
  return SSL_TLSEXT_ERR_OK;
}

/// Mozilla's "intermediate" server profile (version 5.7) for TLS 1.2: forward secrecy and
/// authenticated encryption only, which every client of the last decade speaks. No CBC suite
/// (LUCKY13), no RSA key exchange. TLS 1.3's suites are all AEAD: OpenSSL's own list stays.
constexpr const char* kIntermediateCiphers =
    "ECDHE-ECDSA-AES128-GCM-SHA256:ECDHE-RSA-AES128-GCM-SHA256:"
    "ECDHE-ECDSA-AES256-GCM-SHA384:ECDHE-RSA-AES256-GCM-SHA384:"
    "ECDHE-ECDSA-CHACHA20-POLY1305:ECDHE-RSA-CHACHA20-POLY1305:"
    "DHE-RSA-AES128-GCM-SHA256:DHE-RSA-AES256-GCM-SHA384:DHE-RSA-CHACHA20-POLY1305";
constexpr const char* kIntermediateCurves = "X25519:prime256v1:secp384r1";

/// The listener's `ciphers` and `curves`, or the intermediate profile's; false (with a problem
/// where the key is written) when OpenSSL knows none of those listed.
bool use_ciphers(SSL_CTX* handle, const config::ListenerTls& tls, Problems& problems) {
  bool usable = true;
  const std::string ciphers = tls.ciphers.empty() ? kIntermediateCiphers : tls.ciphers;
  if (SSL_CTX_set_cipher_list(handle, ciphers.c_str()) != 1) {
    problems.add(tls.ciphers_at, tls.path + ".ciphers: \"" + tls.ciphers +
                                     "\" names no TLS 1.2 cipher suite OpenSSL offers ("
                                     "OpenSSL's names, separated by ':')");
    usable = false;
  }
  const std::string curves = tls.curves.empty() ? kIntermediateCurves : tls.curves;
  if (SSL_CTX_set1_groups_list(handle, curves.c_str()) != 1) {
    problems.add(tls.curves_at, tls.path + ".curves: \"" + tls.curves +
                                    "\" is not a list of groups OpenSSL knows (X25519, "
                                    "prime256v1, secp384r1, ... separated by ':')");
    usable = false;
  }
  SSL_CTX_set_dh_auto(handle, 1);  // DHE suites' parameters, sized to the certificate's key
  return usable;
}

/// Staples the listener's `ocsp` file, or what the responder its certificate names answers
/// (the fetch goes to `contexts`, for the refresher); false with a problem if the file does not do.
bool use_ocsp(SSL_CTX* handle, const config::ListenerTls& tls, Contexts& contexts,
              Problems& problems) {
  std::string why;
  if (!tls.ocsp.empty()) {
    auto staple = OcspStaple::read(tls.ocsp, SSL_CTX_get0_certificate(handle), why);
    if (staple == nullptr) {
      problems.add(tls.ocsp_at, tls.path + ".ocsp: " + why);
      return false;
    }
    StapleSlot::install(handle, std::make_shared<const StapleSlot>(std::move(staple)));
  } else if (tls.ocsp_fetch) {
    if (std::shared_ptr<OcspFetch> fetch = OcspFetch::for_context(handle, tls.cert, why)) {
      StapleSlot::install(handle, fetch->slot());
      contexts.ocsp_fetches.push_back(std::move(fetch));
    } else if (!why.empty()) {
      contexts.warnings.push_back(tls.path + ": no OCSP stapling: " + why);
    }
  }
  return true;
}

std::shared_ptr<Context> listener_context(const config::ListenerTls& tls, bool http2,
                                          Contexts& contexts, Problems& problems) {
  auto context = std::make_shared<Context>(Context::tls_server);
  SSL_CTX* handle = context->native_handle();
  SSL_CTX_set_min_proto_version(
      handle, tls.min_version == config::TlsVersion::v1_3 ? TLS1_3_VERSION : TLS1_2_VERSION);
  SSL_CTX_set_options(
      handle, SSL_OP_NO_COMPRESSION | SSL_OP_NO_RENEGOTIATION | SSL_OP_CIPHER_SERVER_PREFERENCE);
  // Idle connections give OpenSSL's record buffers back.
  SSL_CTX_set_mode(handle, SSL_MODE_RELEASE_BUFFERS);
  // Resumption is by tickets only (stateless): no session cache to lock and bound.
  SSL_CTX_set_session_cache_mode(handle, SSL_SESS_CACHE_OFF);
  TicketKeys::shared().install(handle);
  // (OpenSSL takes a non-const argument it only passes back.)
  SSL_CTX_set_alpn_select_cb(
      handle, &select_protocol,
      const_cast<std::string_view*>(http2 ? &kListenerProtocolsWithH2 : &kListenerProtocols));
  bool usable = use_ciphers(handle, tls, problems);
  const bool certified =
      use_certificate(handle, tls.path, tls.cert, tls.cert_at, tls.key, tls.key_at, problems);
  usable = certified && use_ocsp(handle, tls, contexts, problems) && usable;
  if (tls.client_cert != config::ClientCertificates::none) {
    std::string why;
    STACK_OF(X509_NAME)* names = nullptr;
    if (!readable(tls.client_ca, why)) {
      problems.add(tls.client_ca_at,
                   tls.path + ".client_ca: cannot read " + tls.client_ca + ": " + why);
      usable = false;
    } else if (SSL_CTX_load_verify_locations(handle, tls.client_ca.c_str(), nullptr) != 1 ||
               (names = SSL_load_client_CA_file(tls.client_ca.c_str())) == nullptr) {
      problems.add(tls.client_ca_at, tls.path + ".client_ca: " + tls.client_ca +
                                         " holds no PEM certificate: " + openssl_reason());
      usable = false;
    } else {
      SSL_CTX_set_client_CA_list(handle, names);
      const int mode = tls.client_cert == config::ClientCertificates::require
                           ? SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT
                           : SSL_VERIFY_PEER;
      SSL_CTX_set_verify(handle, mode, nullptr);
      // A resumed session keeps its verified client; OpenSSL wants a context name for that.
      static constexpr unsigned char kSessionContext[] = "sluice";
      SSL_CTX_set_session_id_context(handle, kSessionContext, sizeof kSessionContext - 1);
    }
  }
  return usable ? context : nullptr;
}

std::shared_ptr<Context> upstream_context(const config::UpstreamTls& tls, Problems& problems) {
  auto context = std::make_shared<Context>(Context::tls_client);
  SSL_CTX* handle = context->native_handle();
  SSL_CTX_set_min_proto_version(handle, TLS1_2_VERSION);
  SSL_CTX_set_options(handle, SSL_OP_NO_COMPRESSION | SSL_OP_NO_RENEGOTIATION);
  SSL_CTX_set_mode(handle, SSL_MODE_RELEASE_BUFFERS);
  static constexpr unsigned char kProtocols[] = "\x08http/1.1";
  SSL_CTX_set_alpn_protos(handle, kProtocols, sizeof kProtocols - 1);
  bool usable = true;
  if (tls.ca.empty()) {
    SSL_CTX_set_default_verify_paths(handle);
  } else if (std::string why; !readable(tls.ca, why)) {
    problems.add(tls.ca_at, "upstream_tls.ca: cannot read " + tls.ca + ": " + why);
    usable = false;
  } else if (SSL_CTX_load_verify_locations(handle, tls.ca.c_str(), nullptr) != 1) {
    problems.add(tls.ca_at,
                 "upstream_tls.ca: " + tls.ca + " holds no PEM certificate: " + openssl_reason());
    usable = false;
  }
  SSL_CTX_set_verify(handle, tls.verify ? SSL_VERIFY_PEER : SSL_VERIFY_NONE, nullptr);
  if (!tls.cert.empty() && !use_certificate(handle, "upstream_tls", tls.cert, tls.cert_at, tls.key,
                                            tls.key_at, problems)) {
    usable = false;
  }
  return usable ? context : nullptr;
}

/// An https:// upstream, or a JWK Set fetched over https:// (with the same verification).
bool has_https_upstream(const config::ProxyConfig& config) {
  if (config.upstream && config.upstream->tls) {
    return true;
  }
  for (const config::JwtProviderConfig& provider : config.jwt_providers) {
    if (provider.jwks_url.starts_with("https://")) {
      return true;
    }
  }
  return std::any_of(config.routes.begin(), config.routes.end(), [](const config::Route& route) {
    return route.upstream && route.upstream->tls;
  });
}

}  // namespace

bool alpn_chose_h2(const SSL* connection) noexcept {
  const unsigned char* chosen = nullptr;
  unsigned int length = 0;
  SSL_get0_alpn_selected(connection, &chosen, &length);
  return length == 2 && chosen[0] == 'h' && chosen[1] == '2';
}

std::shared_ptr<const Contexts> make_contexts(const config::ProxyConfig& config) {
  auto contexts = std::make_shared<Contexts>();
  Problems problems;
  for (const config::Listener& listener : config.listeners) {
    contexts->listeners.push_back(
        listener.tls ? listener_context(*listener.tls, config.http2.enabled, *contexts, problems)
                     : nullptr);
  }
  if (config.decide) {  // the decision service's listener comes last, as the server binds them
    contexts->listeners.push_back(
        config.decide->tls
            ? listener_context(*config.decide->tls, config.http2.enabled, *contexts, problems)
            : nullptr);
  }
  if (has_https_upstream(config)) {
    contexts->upstream = upstream_context(config.upstream_tls, problems);
  }
  if (!problems.empty()) {
    throw config::ConfigError(config.file, std::move(problems.list()));
  }
  return contexts;
}

}  // namespace sluice::tls
