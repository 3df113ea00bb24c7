#include "proxy/auth/jws_signature.hpp"

#include <openssl/bn.h>
#include <openssl/crypto.h>
#include <openssl/ec.h>
#include <openssl/hmac.h>
#include <openssl/rsa.h>

#include <array>
#include <memory>

namespace sluice::auth {
namespace {

struct DigestContextFree {
  void operator()(EVP_MD_CTX* context) const noexcept { EVP_MD_CTX_free(context); }
};
struct EcdsaSignatureFree {
  void operator()(ECDSA_SIG* signature) const noexcept { ECDSA_SIG_free(signature); }
};
struct OpensslFree {
  void operator()(unsigned char* bytes) const noexcept { OPENSSL_free(bytes); }
};

const EVP_MD* digest_of(JwsAlgorithm algorithm) noexcept {
  switch (algorithm) {
    case JwsAlgorithm::rs256:
    case JwsAlgorithm::ps256:
    case JwsAlgorithm::es256:
    case JwsAlgorithm::hs256:
      return EVP_sha256();
    case JwsAlgorithm::rs384:
    case JwsAlgorithm::ps384:
    case JwsAlgorithm::es384:
    case JwsAlgorithm::hs384:
      return EVP_sha384();
    case JwsAlgorithm::rs512:
    case JwsAlgorithm::ps512:
    case JwsAlgorithm::es512:
    case JwsAlgorithm::hs512:
      return EVP_sha512();
    case JwsAlgorithm::eddsa:
      return nullptr;  // Ed25519 hashes inside
  }
  return nullptr;
}

const unsigned char* bytes_of(std::string_view text) noexcept {
  return reinterpret_cast<const unsigned char*>(text.data());
}

bool hmac_valid(const VerificationKey& key, JwsAlgorithm algorithm, std::string_view input,
                std::string_view signature) {
  std::array<unsigned char, EVP_MAX_MD_SIZE> mac{};
  unsigned int length = 0;
  const std::string& secret = key.secret();
  if (HMAC(digest_of(algorithm), secret.data(), static_cast<int>(secret.size()), bytes_of(input),
           input.size(), mac.data(), &length) == nullptr) {
    return false;
  }
  return signature.size() == length && CRYPTO_memcmp(mac.data(), signature.data(), length) == 0;
}

/// A JWS ECDSA signature (R‖S, each the curve's size) as the DER that OpenSSL verifies; empty
/// when it is not that long.
std::string der_of_ecdsa(JwsAlgorithm algorithm, std::string_view signature) {
  if (signature.size() != ecdsa_signature_bytes(algorithm)) {
    return {};
  }
  const int half = static_cast<int>(signature.size() / 2);
  const std::unique_ptr<ECDSA_SIG, EcdsaSignatureFree> parts(ECDSA_SIG_new());
  BIGNUM* r = BN_bin2bn(bytes_of(signature), half, nullptr);
  BIGNUM* s = BN_bin2bn(bytes_of(signature) + half, half, nullptr);
  if (!parts || r == nullptr || s == nullptr || ECDSA_SIG_set0(parts.get(), r, s) != 1) {
    BN_free(r);
    BN_free(s);
    return {};
  }
  unsigned char* der = nullptr;
  const int length = i2d_ECDSA_SIG(parts.get(), &der);
  const std::unique_ptr<unsigned char, OpensslFree> owned(der);
  if (length <= 0) {
    return {};
  }
  return std::string(reinterpret_cast<const char*>(der), static_cast<std::size_t>(length));
}

}  // namespace

bool signature_valid(const VerificationKey& key, JwsAlgorithm algorithm,
                     std::string_view signing_input, std::string_view signature) {
  if (!key.serves(algorithm)) {
    return false;
  }
  if (key.kind() == KeyKind::secret) {
    return hmac_valid(key, algorithm, signing_input, signature);
  }
  std::string der;
  if (ecdsa_signature_bytes(algorithm) > 0) {
    der = der_of_ecdsa(algorithm, signature);
    if (der.empty()) {
      return false;
    }
    signature = der;
  }
  const std::unique_ptr<EVP_MD_CTX, DigestContextFree> context(EVP_MD_CTX_new());
  EVP_PKEY_CTX* key_context = nullptr;
  if (!context || EVP_DigestVerifyInit(context.get(), &key_context, digest_of(algorithm), nullptr,
                                       key.public_key()) != 1) {
    return false;
  }
  if (algorithm == JwsAlgorithm::ps256 || algorithm == JwsAlgorithm::ps384 ||
      algorithm == JwsAlgorithm::ps512) {
    // RSASSA-PSS with MGF1 over the same hash and a salt as long as the hash (RFC 7518 §3.5).
    if (EVP_PKEY_CTX_set_rsa_padding(key_context, RSA_PKCS1_PSS_PADDING) != 1 ||
        EVP_PKEY_CTX_set_rsa_pss_saltlen(key_context, RSA_PSS_SALTLEN_DIGEST) != 1 ||
        EVP_PKEY_CTX_set_rsa_mgf1_md(key_context, digest_of(algorithm)) != 1) {
      return false;
    }
  }
  return EVP_DigestVerify(context.get(), bytes_of(signature), signature.size(),
                          bytes_of(signing_input), signing_input.size()) == 1;
}

}  // namespace sluice::auth
