#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "proxy/auth/jwt_verifier.hpp"

namespace sluice::auth {

/// Verified tokens remembered while they are valid, so that a client that sends its token again
/// pays a hash and a compare, not a signature check (SPEC §8). One per event loop, so no lock.
/// Bounded: a direct-mapped table where a token takes the slot its hash names from whoever held
/// it. A hit allocates nothing: the caller shares the verified claims.
class TokenCache {
 public:
  static constexpr std::size_t kDefaultSlots = 4096;

  explicit TokenCache(std::size_t slots = kDefaultSlots);

  /// What `provider` verified of this exact token, if it is still valid at `now` (seconds since
  /// the epoch); null otherwise.
  const std::shared_ptr<const VerifiedJwt>* find(std::uint64_t provider, std::string_view token,
                                                 std::int64_t now) const noexcept;
  /// Remembers a token `provider` verified, valid from `valid_from` until before `valid_until`
  /// (its `nbf` and `exp` with the provider's leeway).
  void remember(std::uint64_t provider, std::string_view token, std::int64_t valid_from,
                std::int64_t valid_until, std::shared_ptr<const VerifiedJwt> verified);

 private:
  struct Slot {
    std::uint64_t provider = 0;  ///< 0: empty (provider ids start at 1).
    std::int64_t valid_from = 0;
    std::int64_t valid_until = 0;
    std::string token;
    std::shared_ptr<const VerifiedJwt> verified;
  };
  std::size_t index_of(std::string_view token) const noexcept;

  std::vector<Slot> slots_;
  std::size_t mask_;
};

}  // namespace sluice::auth
