#include "proxy/tls/ocsp_staple.hpp"

#include <openssl/err.h>
#include <openssl/ocsp.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <iterator>

namespace sluice::tls {
namespace {

/// Where a context keeps its staple: OpenSSL frees it with the context (contexts outlive the
/// configuration that made them, for as long as a connection holds one).
int staple_index() {
  static const int index = SSL_CTX_get_ex_new_index(
      0, nullptr, nullptr, nullptr, [](void*, void* data, CRYPTO_EX_DATA*, int, long, void*) {
        delete static_cast<std::shared_ptr<const OcspStaple>*>(data);  // NOLINT: owned here
      });
  return index;
}

/// Answers a client's status_request with the context's staple, while it is current.
int send_staple(SSL* connection, void*) {
  const auto* staple = static_cast<const std::shared_ptr<const OcspStaple>*>(
      SSL_CTX_get_ex_data(SSL_get_SSL_CTX(connection), staple_index()));
  if (staple == nullptr || !(*staple)->current(std::time(nullptr))) {
    return SSL_TLSEXT_ERR_NOACK;
  }
  const std::vector<unsigned char>& der = (*staple)->der();
  // OpenSSL takes the copy and frees it with the connection.
  auto* copy = static_cast<unsigned char*>(OPENSSL_malloc(der.size()));
  if (copy == nullptr) {
    return SSL_TLSEXT_ERR_NOACK;
  }
  std::memcpy(copy, der.data(), der.size());
  SSL_set_tlsext_status_ocsp_resp(connection, copy, static_cast<long>(der.size()));
  return SSL_TLSEXT_ERR_OK;
}

/// The time an ASN.1 time names, as a time_t.
std::time_t to_time_t(const ASN1_GENERALIZEDTIME* time) {
  std::tm parts{};
  if (ASN1_TIME_to_tm(time, &parts) != 1) {
    return 0;
  }
  return ::timegm(&parts);
}

/// The answer in `basic` for `certificate`'s serial number, or null.
OCSP_SINGLERESP* answer_for(OCSP_BASICRESP* basic, X509* certificate) {
  const ASN1_INTEGER* serial = X509_get0_serialNumber(certificate);
  for (int i = 0; i < OCSP_resp_count(basic); ++i) {
    OCSP_SINGLERESP* single = OCSP_resp_get0(basic, i);
    ASN1_INTEGER* answered = nullptr;
    if (OCSP_id_get0_info(nullptr, nullptr, nullptr, &answered,
                          const_cast<OCSP_CERTID*>(OCSP_SINGLERESP_get0_id(single))) == 1 &&
        ASN1_INTEGER_cmp(answered, serial) == 0) {
      return single;
    }
  }
  return nullptr;
}

}  // namespace

std::shared_ptr<const OcspStaple> OcspStaple::read(const std::string& path, X509* certificate,
                                                   std::string& why) {
  why.clear();
  std::ifstream file(path, std::ios::binary);
  if (!file) {
    why = "cannot read " + path + ": " + std::strerror(errno);
    return nullptr;
  }
  auto staple = std::make_shared<OcspStaple>();
  staple->der_.assign(std::istreambuf_iterator<char>(file), std::istreambuf_iterator<char>());
  const unsigned char* cursor = staple->der_.data();
  OCSP_RESPONSE* response =
      d2i_OCSP_RESPONSE(nullptr, &cursor, static_cast<long>(staple->der_.size()));
  if (response == nullptr) {
    ERR_clear_error();
    why = path + " is not a DER OCSP response (openssl ocsp -respout writes one)";
    return nullptr;
  }
  OCSP_BASICRESP* basic = nullptr;
  OCSP_SINGLERESP* single = nullptr;
  int status = V_OCSP_CERTSTATUS_UNKNOWN;
  int reason = 0;
  ASN1_GENERALIZEDTIME* this_update = nullptr;
  ASN1_GENERALIZEDTIME* next_update = nullptr;
  if (OCSP_response_status(response) != OCSP_RESPONSE_STATUS_SUCCESSFUL) {
    why = path + " is an unsuccessful OCSP response (" +
          OCSP_response_status_str(OCSP_response_status(response)) + ")";
  } else if ((basic = OCSP_response_get1_basic(response)) == nullptr) {
    why = path + " holds no basic OCSP response";
  } else if ((single = answer_for(basic, certificate)) == nullptr) {
    why = path + " has no answer for the listener's certificate (its serial number)";
  } else if ((status = OCSP_single_get0_status(single, &reason, nullptr, &this_update,
                                               &next_update)) != V_OCSP_CERTSTATUS_GOOD) {
    why = path + " says the certificate is " + OCSP_cert_status_str(status);
  } else if (OCSP_check_validity(this_update, next_update, 5 * 60, -1) != 1) {
    why = path + " is out of date (or not yet valid): fetch a new one";
  } else if (next_update != nullptr) {
    staple->next_update_ = to_time_t(next_update);
  }
  OCSP_BASICRESP_free(basic);
  OCSP_RESPONSE_free(response);
  ERR_clear_error();
  return why.empty() ? staple : nullptr;
}

void OcspStaple::install(SSL_CTX* context, std::shared_ptr<const OcspStaple> staple) {
  SSL_CTX_set_ex_data(context, staple_index(),
                      new std::shared_ptr<const OcspStaple>(std::move(staple)));  // NOLINT
  // SSL_CTX_set_tlsext_status_cb, without its C cast.
  SSL_CTX_callback_ctrl(context, SSL_CTRL_SET_TLSEXT_STATUS_REQ_CB,
                        reinterpret_cast<void (*)()>(&send_staple));
}

}  // namespace sluice::tls
