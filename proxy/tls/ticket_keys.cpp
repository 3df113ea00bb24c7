#include "proxy/tls/ticket_keys.hpp"

#include <openssl/core_names.h>
#include <openssl/evp.h>
#include <openssl/rand.h>

#include <algorithm>
#include <stdexcept>

namespace sluice::tls {
namespace {

/// Where a context keeps its TicketKeys, for the callback.
int context_index() {
  static const int index = SSL_CTX_get_ex_new_index(0, nullptr, nullptr, nullptr, nullptr);
  return index;
}

bool set_mac_key(EVP_MAC_CTX* mac, std::array<unsigned char, 32>& key) {
  char digest[] = "SHA256";
  const OSSL_PARAM params[] = {
      OSSL_PARAM_construct_octet_string(OSSL_MAC_PARAM_KEY, key.data(), key.size()),
      OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_DIGEST, digest, 0),
      OSSL_PARAM_construct_end()};
  return EVP_MAC_CTX_set_params(mac, params) == 1;
}

}  // namespace

TicketKeys::TicketKeys(const limiter::Clock& clock, limiter::Duration rotation)
    : clock_(clock), rotation_(rotation), current_(make(clock.now())) {}

TicketKeys& TicketKeys::shared() {
  static const limiter::SystemClock clock;
  static TicketKeys keys(clock, kRotation);
  return keys;
}

void TicketKeys::install(SSL_CTX* context) {
  SSL_CTX_set_ex_data(context, context_index(), this);
  SSL_CTX_set_tlsext_ticket_key_evp_cb(context, &TicketKeys::on_ticket);
}

TicketKeys::Key TicketKeys::make(limiter::TimePoint now) {
  Key key;
  if (RAND_bytes(key.name.data(), key.name.size()) != 1 ||
      RAND_bytes(key.cipher.data(), key.cipher.size()) != 1 ||
      RAND_bytes(key.mac.data(), key.mac.size()) != 1) {
    throw std::runtime_error("no random bytes for a TLS session ticket key");
  }
  key.made = now;
  return key;
}

TicketKeys::Key TicketKeys::issuing() {
  const limiter::TimePoint now = clock_.now();
  const std::lock_guard lock(mutex_);
  if (now - current_.made >= rotation_) {
    // Two rotations without a ticket issued: the previous key is too old to keep.
    has_previous_ = now - current_.made < 2 * rotation_;
    previous_ = current_;
    current_ = make(now);
  }
  return current_;
}

TicketKeys::Use TicketKeys::find(const unsigned char* name, Key& key) {
  const limiter::TimePoint now = clock_.now();
  const std::lock_guard lock(mutex_);
  if (std::equal(current_.name.begin(), current_.name.end(), name) &&
      now - current_.made < 2 * rotation_) {
    key = current_;
    return now - current_.made < rotation_ ? Use::current : Use::previous;
  }
  if (has_previous_ && std::equal(previous_.name.begin(), previous_.name.end(), name) &&
      now - previous_.made < 2 * rotation_) {
    key = previous_;
    return Use::previous;
  }
  return Use::none;
}

int TicketKeys::on_ticket(SSL* ssl, unsigned char* name, unsigned char* iv, EVP_CIPHER_CTX* cipher,
                          EVP_MAC_CTX* mac, int encrypt) {
  auto* keys = static_cast<TicketKeys*>(SSL_CTX_get_ex_data(SSL_get_SSL_CTX(ssl), context_index()));
  if (keys == nullptr) {
    return -1;
  }
  Key key;
  if (encrypt == 1) {
    key = keys->issuing();
    const int iv_length = EVP_CIPHER_get_iv_length(EVP_aes_256_cbc());
    if (RAND_bytes(iv, iv_length) != 1) {
      return -1;
    }
    std::copy(key.name.begin(), key.name.end(), name);
    if (EVP_EncryptInit_ex(cipher, EVP_aes_256_cbc(), nullptr, key.cipher.data(), iv) != 1 ||
        !set_mac_key(mac, key.mac)) {
      return -1;
    }
    return 1;
  }
  const Use use = keys->find(name, key);
  if (use == Use::none) {
    return 0;  // unknown or expired: a full handshake
  }
  if (!set_mac_key(mac, key.mac) ||
      EVP_DecryptInit_ex(cipher, EVP_aes_256_cbc(), nullptr, key.cipher.data(), iv) != 1) {
    return -1;
  }
  // 2: resume, and issue a new ticket (with the current key). TLS 1.3 always wants one: its
  // clients use a ticket once (RFC 8446 §C.4), so without it every other reconnection of a
  // client would be a full handshake. TLS 1.2 clients keep theirs until its key is old.
  return use == Use::current && SSL_version(ssl) != TLS1_3_VERSION ? 1 : 2;
}

}  // namespace sluice::tls
