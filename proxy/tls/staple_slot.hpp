#pragma once

#include <openssl/ssl.h>

#include <atomic>
#include <memory>

#include "proxy/tls/ocsp_staple.hpp"

namespace sluice::tls {

/// Where a TLS listener keeps the OCSP response it staples: read by every handshake whose client
/// asks for one, replaced whole by whoever renews it (tls/ocsp_fetch.hpp) while handshakes go
/// on, on any thread.
class StapleSlot {
 public:
  explicit StapleSlot(std::shared_ptr<const OcspStaple> staple = nullptr)
      : staple_(std::move(staple)) {}

  std::shared_ptr<const OcspStaple> load() const noexcept { return staple_.load(); }
  /// Null: staple nothing from now on.
  void store(std::shared_ptr<const OcspStaple> staple) noexcept {
    staple_.store(std::move(staple));
  }

  /// Staples `slot`'s response to every handshake on `context` whose client asks for it, while
  /// the response is current; the context shares the slot from now on.
  static void install(SSL_CTX* context, std::shared_ptr<const StapleSlot> slot);

 private:
  std::atomic<std::shared_ptr<const OcspStaple>> staple_;
};

}  // namespace sluice::tls
