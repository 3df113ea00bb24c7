#include "proxy/auth/verification_key.hpp"

#include <openssl/bio.h>
#include <openssl/bn.h>
#include <openssl/core_names.h>
#include <openssl/param_build.h>
#include <openssl/pem.h>

#include <array>
#include <boost/json/array.hpp>
#include <boost/json/string.hpp>

#include "proxy/auth/base64url.hpp"

namespace sluice::auth {
namespace {

constexpr int kMinimumRsaBits = 2048;  // RFC 7518 §3.3

struct BioFree {
  void operator()(BIO* bio) const noexcept { BIO_free(bio); }
};
struct BnFree {
  void operator()(BIGNUM* number) const noexcept { BN_free(number); }
};
struct ParamBuildFree {
  void operator()(OSSL_PARAM_BLD* build) const noexcept { OSSL_PARAM_BLD_free(build); }
};
struct ParamsFree {
  void operator()(OSSL_PARAM* params) const noexcept { OSSL_PARAM_free(params); }
};
struct PkeyContextFree {
  void operator()(EVP_PKEY_CTX* context) const noexcept { EVP_PKEY_CTX_free(context); }
};

std::size_t hash_bytes(JwsAlgorithm algorithm) noexcept {
  switch (algorithm) {
    case JwsAlgorithm::hs384:
      return 48;
    case JwsAlgorithm::hs512:
      return 64;
    default:
      return 32;
  }
}

/// A JWK member that is a base64url string, decoded; false when absent or not one.
bool member_bytes(const boost::json::object& jwk, std::string_view name, std::string& bytes) {
  const boost::json::value* member = jwk.if_contains(name);
  return member != nullptr && member->is_string() &&
         decode_base64url(std::string_view(member->get_string()), bytes);
}

std::string_view member_text(const boost::json::object& jwk, std::string_view name) {
  const boost::json::value* member = jwk.if_contains(name);
  if (member == nullptr || !member->is_string()) {
    return {};
  }
  return std::string_view(member->get_string());
}

/// A public key from OpenSSL's parameters for `type` ("RSA", "EC").
EvpKey key_from_params(const char* type, OSSL_PARAM_BLD* build) {
  const std::unique_ptr<OSSL_PARAM, ParamsFree> params(OSSL_PARAM_BLD_to_param(build));
  const std::unique_ptr<EVP_PKEY_CTX, PkeyContextFree> context(
      EVP_PKEY_CTX_new_from_name(nullptr, type, nullptr));
  EVP_PKEY* key = nullptr;
  if (!params || !context || EVP_PKEY_fromdata_init(context.get()) != 1 ||
      EVP_PKEY_fromdata(context.get(), &key, EVP_PKEY_PUBLIC_KEY, params.get()) != 1) {
    return nullptr;
  }
  return EvpKey(key);
}

EvpKey rsa_from_jwk(const boost::json::object& jwk, std::string& error) {
  std::string modulus, exponent;
  if (!member_bytes(jwk, "n", modulus) || !member_bytes(jwk, "e", exponent) || modulus.empty() ||
      exponent.empty()) {
    error = "an RSA JWK needs `n` and `e` in base64url";
    return nullptr;
  }
  auto bytes = [](const std::string& text) {
    return reinterpret_cast<const unsigned char*>(text.data());
  };
  const std::unique_ptr<BIGNUM, BnFree> n(
      BN_bin2bn(bytes(modulus), static_cast<int>(modulus.size()), nullptr));
  const std::unique_ptr<BIGNUM, BnFree> e(
      BN_bin2bn(bytes(exponent), static_cast<int>(exponent.size()), nullptr));
  const std::unique_ptr<OSSL_PARAM_BLD, ParamBuildFree> build(OSSL_PARAM_BLD_new());
  if (!n || !e || !build ||
      OSSL_PARAM_BLD_push_BN(build.get(), OSSL_PKEY_PARAM_RSA_N, n.get()) != 1 ||
      OSSL_PARAM_BLD_push_BN(build.get(), OSSL_PKEY_PARAM_RSA_E, e.get()) != 1) {
    error = "the RSA JWK could not be read";
    return nullptr;
  }
  EvpKey key = key_from_params("RSA", build.get());
  if (!key) {
    error = "the RSA JWK is not a valid public key";
  }
  return key;
}

EvpKey ec_from_jwk(const boost::json::object& jwk, std::string& error) {
  const std::string_view curve = member_text(jwk, "crv");
  const char* group = nullptr;
  std::size_t size = 0;
  if (curve == "P-256") {
    group = "prime256v1";
    size = 32;
  } else if (curve == "P-384") {
    group = "secp384r1";
    size = 48;
  } else if (curve == "P-521") {
    group = "secp521r1";
    size = 66;
  } else {
    error = "an EC JWK's `crv` must be P-256, P-384 or P-521";
    return nullptr;
  }
  std::string x, y;
  if (!member_bytes(jwk, "x", x) || !member_bytes(jwk, "y", y) || x.empty() || y.empty() ||
      x.size() > size || y.size() > size) {
    error = "an EC JWK's `x` and `y` must each be at most the curve's size in base64url";
    return nullptr;
  }
  // RFC 7518 §6.2.1.2 wants the full size, but some writers drop leading zero bytes (PyJWT
  // before 2.7 for P-521, where the first byte is zero half the time): put them back.
  x.insert(0, size - x.size(), '\0');
  y.insert(0, size - y.size(), '\0');
  // The uncompressed point (SEC 1 §2.3.3); OpenSSL checks that it is on the curve.
  const std::string point = '\x04' + x + y;
  const std::unique_ptr<OSSL_PARAM_BLD, ParamBuildFree> build(OSSL_PARAM_BLD_new());
  if (!build ||
      OSSL_PARAM_BLD_push_utf8_string(build.get(), OSSL_PKEY_PARAM_GROUP_NAME, group, 0) != 1 ||
      OSSL_PARAM_BLD_push_octet_string(build.get(), OSSL_PKEY_PARAM_PUB_KEY, point.data(),
                                       point.size()) != 1) {
    error = "the EC JWK could not be read";
    return nullptr;
  }
  EvpKey key = key_from_params("EC", build.get());
  if (!key) {
    error = "the EC JWK's point is not on its curve";
  }
  return key;
}

EvpKey okp_from_jwk(const boost::json::object& jwk, std::string& error) {
  std::string x;
  if (member_text(jwk, "crv") != "Ed25519" || !member_bytes(jwk, "x", x) || x.size() != 32) {
    error = "an OKP JWK must be Ed25519 with a 32-byte `x`";
    return nullptr;
  }
  EvpKey key(EVP_PKEY_new_raw_public_key(
      EVP_PKEY_ED25519, nullptr, reinterpret_cast<const unsigned char*>(x.data()), x.size()));
  if (!key) {
    error = "the Ed25519 JWK could not be read";
  }
  return key;
}

/// Whether a JWK says it is for verifying signatures, or says nothing of it.
bool for_verifying(const boost::json::object& jwk) {
  if (const boost::json::value* use = jwk.if_contains("use");
      use != nullptr && !(use->is_string() && use->get_string() == "sig")) {
    return false;
  }
  if (const boost::json::value* operations = jwk.if_contains("key_ops"); operations != nullptr) {
    if (!operations->is_array()) {
      return false;
    }
    for (const boost::json::value& operation : operations->get_array()) {
      if (operation.is_string() && operation.get_string() == "verify") {
        return true;
      }
    }
    return false;
  }
  return true;
}

}  // namespace

std::optional<KeyKind> kind_of(EVP_PKEY* key, std::string& error) {
  switch (EVP_PKEY_get_base_id(key)) {
    case EVP_PKEY_RSA:
      if (EVP_PKEY_get_bits(key) < kMinimumRsaBits) {
        error = "an RSA key must have at least 2048 bits";
        return std::nullopt;
      }
      return KeyKind::rsa;
    case EVP_PKEY_ED25519:
      return KeyKind::ed25519;
    case EVP_PKEY_EC: {
      std::array<char, 64> group{};
      std::size_t length = 0;
      if (EVP_PKEY_get_utf8_string_param(key, OSSL_PKEY_PARAM_GROUP_NAME, group.data(),
                                         group.size(), &length) == 1) {
        const std::string_view name(group.data(), length);
        if (name == "prime256v1" || name == "P-256") {
          return KeyKind::ec_p256;
        }
        if (name == "secp384r1" || name == "P-384") {
          return KeyKind::ec_p384;
        }
        if (name == "secp521r1" || name == "P-521") {
          return KeyKind::ec_p521;
        }
      }
      error = "an EC key must be on P-256, P-384 or P-521";
      return std::nullopt;
    }
    default:
      error = "the key is not RSA, EC or Ed25519";
      return std::nullopt;
  }
}

std::optional<VerificationKey> VerificationKey::from_pem(std::string_view pem,
                                                         JwsAlgorithm algorithm,
                                                         std::string& error) {
  const std::unique_ptr<BIO, BioFree> bio(
      BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())));
  EvpKey key(bio ? PEM_read_bio_PUBKEY(bio.get(), nullptr, nullptr, nullptr) : nullptr);
  if (!key) {
    error = "not a public key in PEM (-----BEGIN PUBLIC KEY-----)";
    return std::nullopt;
  }
  const std::optional<KeyKind> kind = kind_of(key.get(), error);
  if (!kind) {
    return std::nullopt;
  }
  if (*kind != key_kind_of(algorithm)) {
    error = "the key is not of the kind " + std::string(name_of(algorithm)) + " takes";
    return std::nullopt;
  }
  VerificationKey made(*kind, std::move(key), {});
  made.only_ = algorithm;
  return made;
}

std::optional<VerificationKey> VerificationKey::from_secret(std::string secret,
                                                            JwsAlgorithm algorithm,
                                                            std::string& error) {
  if (key_kind_of(algorithm) != KeyKind::secret) {
    error = std::string(name_of(algorithm)) + " takes a public key, not a secret";
    return std::nullopt;
  }
  if (secret.size() < hash_bytes(algorithm)) {
    error = "a secret for " + std::string(name_of(algorithm)) + " must have at least " +
            std::to_string(hash_bytes(algorithm)) + " bytes";
    return std::nullopt;
  }
  VerificationKey made(KeyKind::secret, nullptr, std::move(secret));
  made.only_ = algorithm;
  return made;
}

std::optional<VerificationKey> VerificationKey::from_jwk(const boost::json::object& jwk,
                                                         std::string& error) {
  if (!for_verifying(jwk)) {
    error = "the JWK is not for verifying signatures (`use`, `key_ops`)";
    return std::nullopt;
  }
  std::optional<JwsAlgorithm> only;
  if (jwk.contains("alg")) {
    only = algorithm_named(member_text(jwk, "alg"));
    if (!only) {
      error = "the JWK's `alg` is not an algorithm sluice verifies";
      return std::nullopt;
    }
  }
  const std::string_view type = member_text(jwk, "kty");
  std::optional<VerificationKey> made;
  if (type == "oct") {
    std::string secret;
    if (!member_bytes(jwk, "k", secret) || secret.empty()) {
      error = "an oct JWK needs `k` in base64url";
      return std::nullopt;
    }
    if (secret.size() < hash_bytes(only.value_or(JwsAlgorithm::hs256))) {
      error = "an oct JWK's `k` is shorter than its algorithm's hash (RFC 7518 §3.2)";
      return std::nullopt;
    }
    made = VerificationKey(KeyKind::secret, nullptr, std::move(secret));
  } else {
    EvpKey key = type == "RSA"   ? rsa_from_jwk(jwk, error)
                 : type == "EC"  ? ec_from_jwk(jwk, error)
                 : type == "OKP" ? okp_from_jwk(jwk, error)
                                 : (error = "the JWK's `kty` must be RSA, EC, OKP or oct", nullptr);
    if (!key) {
      return std::nullopt;
    }
    const std::optional<KeyKind> kind = kind_of(key.get(), error);
    if (!kind) {
      return std::nullopt;
    }
    made = VerificationKey(*kind, std::move(key), {});
  }
  if (only && key_kind_of(*only) != made->kind_) {
    error = "the JWK's `alg` does not fit its key";
    return std::nullopt;
  }
  made->only_ = only;
  made->kid_ = std::string(member_text(jwk, "kid"));
  return made;
}

bool VerificationKey::serves(JwsAlgorithm algorithm) const noexcept {
  return key_kind_of(algorithm) == kind_ && (!only_ || *only_ == algorithm);
}

}  // namespace sluice::auth
