#include "proxy/tls/peer.hpp"

#include <openssl/evp.h>
#include <openssl/x509v3.h>

#include <algorithm>
#include <array>
#include <boost/asio/ip/address.hpp>
#include <memory>

namespace sluice::tls {
namespace {

std::string rfc2253_subject(X509* certificate) {
  BIO* out = BIO_new(BIO_s_mem());
  X509_NAME_print_ex(out, X509_get_subject_name(certificate), 0, XN_FLAG_RFC2253);
  std::string text(BIO_ctrl_pending(out), '\0');
  const int read = BIO_read(out, text.data(), static_cast<int>(text.size()));
  text.resize(static_cast<std::size_t>(std::max(read, 0)));
  BIO_free(out);
  return text;
}

/// The first DNS or URI subject alternative name, in the certificate's order.
std::string first_name(X509* certificate) {
  auto* names = static_cast<GENERAL_NAMES*>(
      X509_get_ext_d2i(certificate, NID_subject_alt_name, nullptr, nullptr));
  if (names == nullptr) {
    return {};
  }
  std::string found;
  for (int i = 0; i < sk_GENERAL_NAME_num(names) && found.empty(); ++i) {
    const GENERAL_NAME* name = sk_GENERAL_NAME_value(names, i);
    if (name->type == GEN_DNS || name->type == GEN_URI) {
      const ASN1_IA5STRING* text =
          name->type == GEN_DNS ? name->d.dNSName : name->d.uniformResourceIdentifier;
      found.assign(reinterpret_cast<const char*>(ASN1_STRING_get0_data(text)),
                   static_cast<std::size_t>(ASN1_STRING_length(text)));
    }
  }
  GENERAL_NAMES_free(names);
  return found;
}

std::string sha256_hex(X509* certificate) {
  std::array<unsigned char, EVP_MAX_MD_SIZE> digest{};
  unsigned int length = 0;
  X509_digest(certificate, EVP_sha256(), digest.data(), &length);
  static constexpr char kHex[] = "0123456789abcdef";
  std::string text;
  text.reserve(length * 2);
  for (unsigned int i = 0; i < length; ++i) {
    text += kHex[digest[i] >> 4];
    text += kHex[digest[i] & 0xf];
  }
  return text;
}

}  // namespace

std::optional<pipeline::ClientCertificate> client_certificate(SSL* ssl) {
  X509* certificate = SSL_get0_peer_certificate(ssl);
  if (certificate == nullptr || SSL_get_verify_result(ssl) != X509_V_OK) {
    return std::nullopt;
  }
  return pipeline::ClientCertificate{.subject = rfc2253_subject(certificate),
                                     .san = first_name(certificate),
                                     .fingerprint = sha256_hex(certificate)};
}

void expect_server(SSL* ssl, const std::string& name) {
  boost::system::error_code not_an_address;
  boost::asio::ip::make_address(name, not_an_address);
  if (not_an_address) {
    // SSL_set_tlsext_host_name, without its macro's C cast.
    SSL_ctrl(ssl, SSL_CTRL_SET_TLSEXT_HOSTNAME, TLSEXT_NAMETYPE_host_name,
             const_cast<char*>(name.c_str()));
    SSL_set1_host(ssl, name.c_str());
  } else {
    X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl), name.c_str());
  }
}

std::string handshake_failure(SSL* ssl, const boost::system::error_code& error) {
  const long verified = SSL_get_verify_result(ssl);
  if (verified != X509_V_OK) {
    return std::string("certificate verify failed: ") + X509_verify_cert_error_string(verified);
  }
  return error.message();
}

}  // namespace sluice::tls
