#pragma once

#include <openssl/ssl.h>

#include <ctime>
#include <memory>
#include <string>
#include <vector>

namespace sluice::tls {

/// An OCSP response a TLS listener staples to its handshakes (RFC 6066 §8, "status_request"),
/// so that clients need not ask the CA's responder whether the certificate is revoked: read from
/// the listener's `ocsp` file (DER, as `openssl ocsp -respout` writes it, nginx's
/// `ssl_stapling_file` and HAProxy's `.ocsp` files read it), checked against the certificate
/// when it is read. Its signature is the clients' to verify, as they do with any stapled one.
class OcspStaple {
 public:
  /// Reads `path` and checks it for `certificate`: an OCSP response, successful, with an
  /// answer for this certificate's serial number that says `good` and is current. Null, and
  /// the reason in `why`, when it is not.
  static std::shared_ptr<const OcspStaple> read(const std::string& path, X509* certificate,
                                                std::string& why);

  /// Staples `staple` to every handshake on `context` whose client asks for it, while it is
  /// current; the context owns it from now on.
  static void install(SSL_CTX* context, std::shared_ptr<const OcspStaple> staple);

  /// Whether it may still be sent at `now`: before its nextUpdate (always, without one). A
  /// response past it is left out rather than sent stale: a client would reject it.
  bool current(std::time_t now) const noexcept { return next_update_ == 0 || now < next_update_; }
  const std::vector<unsigned char>& der() const noexcept { return der_; }

 private:
  std::vector<unsigned char> der_;
  std::time_t next_update_ = 0;  ///< 0: none.
};

}  // namespace sluice::tls
