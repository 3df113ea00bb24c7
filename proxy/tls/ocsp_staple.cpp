#include "proxy/tls/ocsp_staple.hpp"

#include <openssl/err.h>
#include <openssl/ocsp.h>
#include <openssl/x509_vfy.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <iterator>

namespace sluice::tls {
namespace {

/// The time an ASN.1 time names, as a time_t.
std::time_t to_time_t(const ASN1_GENERALIZEDTIME* time) {
  std::tm parts{};
  if (ASN1_TIME_to_tm(time, &parts) != 1) {
    return 0;
  }
  return ::timegm(&parts);
}

/// The answer in `basic` for `certificate`'s serial number, or null.
OCSP_SINGLERESP* answer_for_serial(OCSP_BASICRESP* basic, X509* certificate) {
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

/// Whether `basic` is signed by `issuer` or by a responder certificate `issuer` signed for OCSP:
/// `issuer` is the only trust anchor (it may be an intermediate, hence the partial chain).
bool signed_for(OCSP_BASICRESP* basic, X509* issuer) {
  X509_STORE* anchors = X509_STORE_new();
  STACK_OF(X509)* known = sk_X509_new_null();
  bool verified = false;
  if (anchors != nullptr && known != nullptr && X509_STORE_add_cert(anchors, issuer) == 1 &&
      X509_STORE_set_flags(anchors, X509_V_FLAG_PARTIAL_CHAIN) == 1 &&
      sk_X509_push(known, issuer) > 0) {
    verified = OCSP_basic_verify(basic, known, anchors, 0) == 1;
  }
  sk_X509_free(known);
  X509_STORE_free(anchors);
  return verified;
}

/// The checks every staple passes: `der` from `source` is an OCSP response, successful, whose
/// answer `find(basic)` picks says `good` and is current; `verify(basic)` (when given) says who
/// may have signed it.
template <class Find, class Verify>
OcspStaple::Checked inspect(std::vector<unsigned char> der, std::string_view source, Find find,
                            Verify verify) {
  OcspStaple::Checked checked;
  std::string& why = checked.why;
  const std::string from(source);
  const unsigned char* cursor = der.data();
  OCSP_RESPONSE* response = d2i_OCSP_RESPONSE(nullptr, &cursor, static_cast<long>(der.size()));
  if (response == nullptr) {
    ERR_clear_error();
    checked.why = from + " is not a DER OCSP response (openssl ocsp -respout writes one)";
    return checked;
  }
  OCSP_BASICRESP* basic = nullptr;
  OCSP_SINGLERESP* single = nullptr;
  int status = V_OCSP_CERTSTATUS_UNKNOWN;
  int reason = 0;
  ASN1_GENERALIZEDTIME* this_update = nullptr;
  ASN1_GENERALIZEDTIME* next_update = nullptr;
  std::time_t next = 0;
  if (OCSP_response_status(response) != OCSP_RESPONSE_STATUS_SUCCESSFUL) {
    why = from + " is an unsuccessful OCSP response (" +
          OCSP_response_status_str(OCSP_response_status(response)) + ")";
  } else if ((basic = OCSP_response_get1_basic(response)) == nullptr) {
    why = from + " holds no basic OCSP response";
  } else if (!verify(basic)) {
    why = from + " is not signed by the certificate's issuer (nor by a responder it delegated to)";
  } else if ((single = find(basic)) == nullptr) {
    why = from + " has no answer for the listener's certificate (its serial number)";
  } else if ((status = OCSP_single_get0_status(single, &reason, nullptr, &this_update,
                                               &next_update)) != V_OCSP_CERTSTATUS_GOOD) {
    why = from + " says the certificate is " + OCSP_cert_status_str(status);
    checked.revoked = status == V_OCSP_CERTSTATUS_REVOKED;
  } else if (OCSP_check_validity(this_update, next_update, 5 * 60, -1) != 1) {
    why = from + " is out of date (or not yet valid): fetch a new one";
  } else if (next_update != nullptr) {
    next = to_time_t(next_update);
  }
  OCSP_BASICRESP_free(basic);
  OCSP_RESPONSE_free(response);
  ERR_clear_error();
  if (why.empty()) {
    checked.staple = std::make_shared<const OcspStaple>(std::move(der), next);
  }
  return checked;
}

}  // namespace

std::shared_ptr<const OcspStaple> OcspStaple::read(const std::string& path, X509* certificate,
                                                   std::string& why) {
  std::ifstream file(path, std::ios::binary);
  if (!file) {
    why = "cannot read " + path + ": " + std::strerror(errno);
    return nullptr;
  }
  std::vector<unsigned char> der{std::istreambuf_iterator<char>(file),
                                 std::istreambuf_iterator<char>()};
  Checked checked = inspect(
      std::move(der), path,
      [certificate](OCSP_BASICRESP* basic) { return answer_for_serial(basic, certificate); },
      [](OCSP_BASICRESP*) { return true; });
  why = std::move(checked.why);
  return std::move(checked.staple);
}

OcspStaple::Checked OcspStaple::check(std::string_view der, std::string_view source,
                                      OCSP_CERTID* id, X509* issuer) {
  return inspect(
      std::vector<unsigned char>(der.begin(), der.end()), source,
      [id](OCSP_BASICRESP* basic) {
        const int index = OCSP_resp_find(basic, id, -1);
        return index < 0 ? nullptr : OCSP_resp_get0(basic, index);
      },
      [issuer](OCSP_BASICRESP* basic) { return signed_for(basic, issuer); });
}

}  // namespace sluice::tls
