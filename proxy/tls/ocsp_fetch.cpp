#include "proxy/tls/ocsp_fetch.hpp"

#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/x509v3.h>

#include <algorithm>
#include <boost/url/encode.hpp>
#include <boost/url/rfc/unreserved_chars.hpp>
#include <map>
#include <mutex>
#include <vector>

namespace sluice::tls {
namespace {

/// The first http:// OCSP responder the certificate's Authority Information Access names; empty:
/// none. (OCSP travels in cleartext, its answers signed; nginx asks http:// responders only too.)
std::string responder_of(X509* certificate) {
  STACK_OF(OPENSSL_STRING)* urls = X509_get1_ocsp(certificate);
  std::string found;
  for (int i = 0; i < sk_OPENSSL_STRING_num(urls) && found.empty(); ++i) {
    const std::string_view url = sk_OPENSSL_STRING_value(urls, i);
    if (url.starts_with("http://")) {
      found = url;
    }
  }
  X509_email_free(urls);  // (how OpenSSL frees what X509_get1_ocsp returns)
  return found;
}

/// The certificate in the context's chain that issued its leaf, or null.
X509* issuer_in_chain(SSL_CTX* context, X509* leaf) {
  STACK_OF(X509)* chain = nullptr;
  SSL_CTX_get0_chain_certs(context, &chain);
  for (int i = 0; i < sk_X509_num(chain); ++i) {
    X509* candidate = sk_X509_value(chain, i);
    if (X509_check_issued(candidate, leaf) == X509_V_OK) {
      return candidate;
    }
  }
  return nullptr;
}

/// RFC 5019 §5: the responder's URL, '/', then the DER request in base64, URL-encoded.
std::string get_url(const std::string& responder, const std::vector<unsigned char>& request) {
  std::string base64(4 * ((request.size() + 2) / 3) + 1, '\0');
  const int length = EVP_EncodeBlock(reinterpret_cast<unsigned char*>(base64.data()),
                                     request.data(), static_cast<int>(request.size()));
  base64.resize(static_cast<std::size_t>(std::max(length, 0)));
  std::string url = responder;
  if (!url.ends_with('/')) {
    url += '/';
  }
  // Base64's '+', '/' and '=' are not unreserved: they become %2B, %2F and %3D.
  url += boost::urls::encode(base64, boost::urls::unreserved_chars);
  return url;
}

/// The DER of an OCSP request for `id` alone (no nonce: responders answer from a cache).
std::vector<unsigned char> request_for(const OCSP_CERTID* id) {
  std::vector<unsigned char> der;
  OCSP_REQUEST* request = OCSP_REQUEST_new();
  OCSP_CERTID* copy = OCSP_CERTID_dup(id);
  if (request != nullptr && copy != nullptr && OCSP_request_add0_id(request, copy) != nullptr) {
    copy = nullptr;  // the request's now
    const int length = i2d_OCSP_REQUEST(request, nullptr);
    if (length > 0) {
      der.resize(static_cast<std::size_t>(length));
      unsigned char* cursor = der.data();
      i2d_OCSP_REQUEST(request, &cursor);
    }
  }
  OCSP_CERTID_free(copy);
  OCSP_REQUEST_free(request);
  return der;
}

/// The fetches alive, by request and responder: contexts built for the same certificate share
/// one. Touched only where contexts are built (start, check, reload).
std::mutex g_fetches_mutex;
std::map<std::string, std::weak_ptr<OcspFetch>> g_fetches;

}  // namespace

std::shared_ptr<OcspFetch> OcspFetch::for_context(SSL_CTX* context, const std::string& name,
                                                  std::string& why) {
  why.clear();
  X509* leaf = SSL_CTX_get0_certificate(context);
  const std::string responder = leaf != nullptr ? responder_of(leaf) : std::string();
  if (responder.empty()) {
    return nullptr;
  }
  X509* issuer = issuer_in_chain(context, leaf);
  if (issuer == nullptr) {
    why = name + " names an OCSP responder (" + responder +
          ") but not its issuer's certificate after it: the request names the issuer and its "
          "answer is verified against it";
    return nullptr;
  }
  OCSP_CERTID* id = OCSP_cert_to_id(EVP_sha1(), leaf, issuer);
  const std::vector<unsigned char> request =
      id != nullptr ? request_for(id) : std::vector<unsigned char>{};
  if (request.empty()) {
    OCSP_CERTID_free(id);
    ERR_clear_error();
    why = name + ": cannot make an OCSP request for it";
    return nullptr;
  }
  const std::string url = get_url(responder, request);
  const std::lock_guard lock(g_fetches_mutex);
  std::erase_if(g_fetches, [](const auto& entry) { return entry.second.expired(); });
  if (std::shared_ptr<OcspFetch> shared = g_fetches[url].lock()) {
    OCSP_CERTID_free(id);
    return shared;
  }
  std::shared_ptr<OcspFetch> fetch(new OcspFetch());  // (its constructor is private)
  fetch->name_ = name;
  fetch->responder_ = responder;
  fetch->url_ = url;
  X509_up_ref(issuer);
  fetch->issuer_ = issuer;
  fetch->id_ = id;
  g_fetches[url] = fetch;
  return fetch;
}

OcspFetch::~OcspFetch() {
  OCSP_CERTID_free(id_);
  X509_free(issuer_);
}

OcspStaple::Checked OcspFetch::take(std::string_view der) {
  OcspStaple::Checked checked = OcspStaple::check(der, responder_, id_, issuer_);
  if (checked.staple != nullptr) {
    slot_->store(checked.staple);
  } else if (checked.revoked) {
    slot_->store(nullptr);
  }
  return checked;
}

std::chrono::seconds OcspFetch::refresh_after(const OcspStaple* staple, std::time_t now) {
  if (staple == nullptr) {
    return kOcspRetry;
  }
  if (staple->next_update() == 0) {
    return kOcspLongestRefresh;
  }
  const std::chrono::seconds half{(staple->next_update() - now) / 2};
  return std::clamp(half, kOcspShortestRefresh, kOcspLongestRefresh);
}

}  // namespace sluice::tls
