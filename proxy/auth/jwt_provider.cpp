#include "proxy/auth/jwt_provider.hpp"

namespace sluice::auth {
namespace {

std::uint64_t next_provider_id() noexcept {
  static std::atomic<std::uint64_t> last{0};
  return last.fetch_add(1, std::memory_order_relaxed) + 1;
}

}  // namespace

JwtProvider::JwtProvider(std::string name, JwtRules rules, std::shared_ptr<const KeySet> keys,
                         std::string source)
    : name_(std::move(name)),
      rules_(std::move(rules)),
      source_(std::move(source)),
      keys_(std::move(keys)),
      id_(next_provider_id()) {}

JwtCheck JwtProvider::verify(std::string_view token, std::int64_t now,
                             VerifiedJwt& verified) const {
  const std::shared_ptr<const KeySet> set = keys();
  const JwtCheck check = verify_jwt(token, set->keys, rules_, now, verified);
  if (check == JwtCheck::unknown_key) {
    unknown_kid_.store(true, std::memory_order_relaxed);
  }
  return check;
}

}  // namespace sluice::auth
