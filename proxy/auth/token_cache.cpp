#include "proxy/auth/token_cache.hpp"

#include <bit>
#include <functional>

namespace sluice::auth {

TokenCache::TokenCache(std::size_t slots)
    : slots_(std::bit_ceil(std::max<std::size_t>(slots, 1))), mask_(slots_.size() - 1) {}

std::size_t TokenCache::index_of(std::string_view token) const noexcept {
  return std::hash<std::string_view>{}(token)&mask_;
}

const std::shared_ptr<const VerifiedJwt>* TokenCache::find(std::uint64_t provider,
                                                           std::string_view token,
                                                           std::int64_t now) const noexcept {
  const Slot& slot = slots_[index_of(token)];
  if (slot.provider != provider || now < slot.valid_from || now >= slot.valid_until ||
      slot.token != token) {
    return nullptr;
  }
  return &slot.verified;
}

void TokenCache::remember(std::uint64_t provider, std::string_view token, std::int64_t valid_from,
                          std::int64_t valid_until, std::shared_ptr<const VerifiedJwt> verified) {
  Slot& slot = slots_[index_of(token)];
  slot.provider = provider;
  slot.valid_from = valid_from;
  slot.valid_until = valid_until;
  slot.token.assign(token);  // keeps the slot's capacity: a slot's next token rarely allocates
  slot.verified = std::move(verified);
}

}  // namespace sluice::auth
