#pragma once

#include <openssl/ssl.h>

#include <array>
#include <mutex>

#include "limiter/clock.hpp"

namespace sluice::tls {

/// The keys that encrypt TLS session tickets, rotated: a new key every `rotation`, the one
/// before it still accepted (its tickets are renewed), older ones forgotten. So a ticket
/// resumes a session for at most two rotations, and one stolen key opens at most that much
/// traffic. One set serves every listener and outlives reloads (shared()): a client resumes
/// across a certificate reload, as it does across nginx's `ssl_session_ticket_key` files.
/// Tickets are AES-256-CBC with HMAC-SHA256, as OpenSSL's own default keys make them.
class TicketKeys {
 public:
  static constexpr auto kRotation = std::chrono::hours(1);

  TicketKeys(const limiter::Clock& clock, limiter::Duration rotation);
  TicketKeys(const TicketKeys&) = delete;
  TicketKeys& operator=(const TicketKeys&) = delete;
  TicketKeys(TicketKeys&&) = delete;
  TicketKeys& operator=(TicketKeys&&) = delete;

  /// The process's keys, on the system clock, rotated every kRotation.
  static TicketKeys& shared();

  /// Makes `context` issue and accept tickets with these keys (which must outlive it).
  void install(SSL_CTX* context);

 private:
  struct Key {
    std::array<unsigned char, 16> name{};
    std::array<unsigned char, 32> cipher{};
    std::array<unsigned char, 32> mac{};
    limiter::TimePoint made{};
  };
  enum class Use { none, current, previous };

  static int on_ticket(SSL* ssl, unsigned char* name, unsigned char* iv, EVP_CIPHER_CTX* cipher,
                       EVP_MAC_CTX* mac, int encrypt);
  /// The key to issue a ticket with, rotated first if due.
  Key issuing();
  /// The key a ticket names, and whether it is the current one.
  Use find(const unsigned char* name, Key& key);
  static Key make(limiter::TimePoint now);

  const limiter::Clock& clock_;
  limiter::Duration rotation_;
  std::mutex mutex_;  ///< Taken once per handshake that issues or reads a ticket.
  Key current_;
  Key previous_;
  bool has_previous_ = false;
};

}  // namespace sluice::tls
