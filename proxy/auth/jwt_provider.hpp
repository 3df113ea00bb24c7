#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "proxy/auth/jwt_verifier.hpp"
#include "proxy/auth/key_set.hpp"

namespace sluice::auth {

/// A named issuer of tokens (an `auth.jwt` provider): its rules and its current key set. The key
/// set may be replaced while requests verify (a JWKS refresh): a verification keeps the set it
/// started with. Thread-safe.
class JwtProvider {
 public:
  /// `source`: the URL its key set is fetched from; empty for keys read from files.
  JwtProvider(std::string name, JwtRules rules, std::shared_ptr<const KeySet> keys,
              std::string source = {});

  /// `verify_jwt` with the provider's rules and current keys. An unknown `kid` is remembered
  /// (see wants_keys) so that a fetched key set is refetched at once.
  JwtCheck verify(std::string_view token, std::int64_t now, VerifiedJwt& verified) const;

  std::shared_ptr<const KeySet> keys() const { return keys_.load(std::memory_order_acquire); }
  void replace_keys(std::shared_ptr<const KeySet> keys) {
    keys_.store(std::move(keys), std::memory_order_release);
  }
  /// Whether a token named a key the set does not hold since the last call (then cleared).
  bool wants_keys() noexcept { return unknown_kid_.exchange(false, std::memory_order_relaxed); }

  const std::string& name() const noexcept { return name_; }
  const JwtRules& rules() const noexcept { return rules_; }
  const std::string& source() const noexcept { return source_; }
  /// Unique among the providers this process ever made: what a token cache files a verified
  /// token under, so that a reload's new rules never meet an old provider's verdict.
  std::uint64_t id() const noexcept { return id_; }

 private:
  std::string name_;
  JwtRules rules_;
  std::string source_;
  std::atomic<std::shared_ptr<const KeySet>> keys_;
  mutable std::atomic<bool> unknown_kid_{false};
  std::uint64_t id_;
};

}  // namespace sluice::auth
