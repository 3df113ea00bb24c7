#pragma once

#include <openssl/ocsp.h>
#include <openssl/ssl.h>

#include <chrono>
#include <ctime>
#include <memory>
#include <string>
#include <string_view>

#include "proxy/tls/ocsp_staple.hpp"
#include "proxy/tls/staple_slot.hpp"

namespace sluice::tls {

/// The wait before asking a responder again after it failed (nginx's too).
inline constexpr std::chrono::seconds kOcspRetry{5 * 60};
/// The longest a fetched staple serves before the next fetch: a certificate revoked since is
/// heard of within the hour, whatever the response's nextUpdate.
inline constexpr std::chrono::seconds kOcspLongestRefresh{60 * 60};
/// The shortest: a responder whose answers are current for seconds is not asked every tick.
inline constexpr std::chrono::seconds kOcspShortestRefresh{60};

/// What sluice asks the OCSP responder a listener's certificate names (its Authority
/// Information Access), for the response it staples: the GET of RFC 5019 §5 (no nonce, a SHA-1
/// certificate ID, as responders and their caches expect), and where the answer goes. One per
/// certificate and responder, shared by every context built for them while one lives: a reload
/// that keeps the certificate keeps its staple and its schedule; a new certificate is asked for
/// at once. The refresher (server/ocsp_refresher.hpp) fetches; handshakes read the slot.
class OcspFetch {
 public:
  /// The fetch for the certificate `context` serves, named `name` (its file) in logs and
  /// metrics. Null when the certificate names no http:// responder (`why` empty:
  /// nothing to staple), or when the chain after it in the file lacks its issuer, which the
  /// request names and the response is verified against (`why` says so).
  static std::shared_ptr<OcspFetch> for_context(SSL_CTX* context, const std::string& name,
                                                std::string& why);

  OcspFetch(const OcspFetch&) = delete;
  OcspFetch& operator=(const OcspFetch&) = delete;
  ~OcspFetch();

  const std::string& name() const noexcept { return name_; }
  /// The responder's URL, as the certificate names it.
  const std::string& responder() const noexcept { return responder_; }
  /// The GET's URL: the responder's, then the request in base64, URL-encoded.
  const std::string& url() const noexcept { return url_; }
  const std::shared_ptr<StapleSlot>& slot() const noexcept { return slot_; }

  /// Takes the responder's answer (`der`): a good, current one that the issuer vouches for
  /// becomes the staple; one that says `revoked` empties the slot (an older good answer no
  /// longer vouches for the certificate); any other failure keeps the staple there is.
  OcspStaple::Checked take(std::string_view der);

  /// How long after an answer at `now` to ask again: half the time left to its nextUpdate,
  /// between kOcspShortestRefresh and kOcspLongestRefresh; kOcspRetry without a staple.
  static std::chrono::seconds refresh_after(const OcspStaple* staple, std::time_t now);

  /// When the next fetch is due, on the refresher's clock: the refresher's alone to touch.
  std::chrono::steady_clock::time_point due{};

 private:
  OcspFetch() = default;

  std::string name_;
  std::string responder_;
  std::string url_;
  X509* issuer_ = nullptr;     ///< Owned.
  OCSP_CERTID* id_ = nullptr;  ///< Owned.
  std::shared_ptr<StapleSlot> slot_ = std::make_shared<StapleSlot>();
};

}  // namespace sluice::tls
