#pragma once

#include <openssl/ocsp.h>
#include <openssl/ssl.h>

#include <ctime>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace sluice::tls {

/// An OCSP response a TLS listener staples to its handshakes (RFC 6066 §8, "status_request"),
/// so that clients need not ask the CA's responder whether the certificate is revoked: read from
/// the listener's `ocsp` file (DER, as `openssl ocsp -respout` writes it, nginx's
/// `ssl_stapling_file` and HAProxy's `.ocsp` files read it), or fetched from the responder the
/// certificate names (tls/ocsp_fetch.hpp). Checked against the certificate either way.
class OcspStaple {
 public:
  /// What a response said of a certificate: the staple, or why there is none.
  struct Checked {
    std::shared_ptr<const OcspStaple> staple;
    std::string why;       ///< Empty with a staple.
    bool revoked = false;  ///< The response says the certificate is revoked.
  };

  /// Reads `path` and checks it for `certificate`: an OCSP response, successful, with an
  /// answer for this certificate's serial number that says `good` and is current. Null, and
  /// the reason in `why`, when it is not. Its signature is the clients' to verify, as they do
  /// with any stapled one.
  static std::shared_ptr<const OcspStaple> read(const std::string& path, X509* certificate,
                                                std::string& why);

  /// A response from `source` (the responder's URL, for messages) checked as read() checks a
  /// file, for the certificate `id` names, and verified: signed by `issuer` (the certificate's,
  /// trusted as the anchor) or by a responder `issuer` delegated to (RFC 6960 §4.2.2.2).
  static Checked check(std::string_view der, std::string_view source, OCSP_CERTID* id,
                       X509* issuer);

  /// A checked response: its bytes, and its nextUpdate (0: none).
  OcspStaple(std::vector<unsigned char> der, std::time_t next_update)
      : der_(std::move(der)), next_update_(next_update) {}

  /// Whether it may still be sent at `now`: before its nextUpdate (always, without one). A
  /// response past it is left out rather than sent stale: a client would reject it.
  bool current(std::time_t now) const noexcept { return next_update_ == 0 || now < next_update_; }
  const std::vector<unsigned char>& der() const noexcept { return der_; }
  std::time_t next_update() const noexcept { return next_update_; }  ///< 0: none.

 private:
  std::vector<unsigned char> der_;
  std::time_t next_update_;
};

}  // namespace sluice::tls
