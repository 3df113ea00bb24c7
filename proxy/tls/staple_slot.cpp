#include "proxy/tls/staple_slot.hpp"

#include <openssl/ocsp.h>

#include <cstring>
#include <ctime>

namespace sluice::tls {
namespace {

using SharedSlot = std::shared_ptr<const StapleSlot>;

/// Where a context keeps its slot: OpenSSL frees it with the context (contexts outlive the
/// configuration that made them, for as long as a connection holds one).
int slot_index() {
  static const int index = SSL_CTX_get_ex_new_index(
      0, nullptr, nullptr, nullptr, [](void*, void* data, CRYPTO_EX_DATA*, int, long, void*) {
        delete static_cast<SharedSlot*>(data);  // NOLINT: owned here
      });
  return index;
}

/// Answers a client's status_request with the slot's staple, while it is current.
int send_staple(SSL* connection, void*) {
  const auto* slot = static_cast<const SharedSlot*>(
      SSL_CTX_get_ex_data(SSL_get_SSL_CTX(connection), slot_index()));
  const std::shared_ptr<const OcspStaple> staple = slot != nullptr ? (*slot)->load() : nullptr;
  if (staple == nullptr || !staple->current(std::time(nullptr))) {
    return SSL_TLSEXT_ERR_NOACK;
  }
  const std::vector<unsigned char>& der = staple->der();
  // OpenSSL takes the copy and frees it with the connection.
  auto* copy = static_cast<unsigned char*>(OPENSSL_malloc(der.size()));
  if (copy == nullptr) {
    return SSL_TLSEXT_ERR_NOACK;
  }
  std::memcpy(copy, der.data(), der.size());
  SSL_set_tlsext_status_ocsp_resp(connection, copy, static_cast<long>(der.size()));
  return SSL_TLSEXT_ERR_OK;
}

}  // namespace

void StapleSlot::install(SSL_CTX* context, std::shared_ptr<const StapleSlot> slot) {
  SSL_CTX_set_ex_data(context, slot_index(), new SharedSlot(std::move(slot)));  // NOLINT
  // SSL_CTX_set_tlsext_status_cb, without its C cast.
  SSL_CTX_callback_ctrl(context, SSL_CTRL_SET_TLSEXT_STATUS_REQ_CB,
                        reinterpret_cast<void (*)()>(&send_staple));
}

}  // namespace sluice::tls
