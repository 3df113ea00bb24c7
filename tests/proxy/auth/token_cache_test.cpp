#include "proxy/auth/token_cache.hpp"

#include <gtest/gtest.h>

namespace sluice::auth {
namespace {

std::shared_ptr<const VerifiedJwt> verified(std::int64_t expires) {
  auto token = std::make_shared<VerifiedJwt>();
  token->expires = expires;
  return token;
}

TEST(TokenCache, RemembersATokenWhileItIsValidForItsProviderOnly) {
  TokenCache cache;
  const auto alice = verified(2000);
  cache.remember(1, "token-a", 900, 2060, alice);
  EXPECT_EQ(cache.find(1, "token-a", 900)->get(), alice.get());
  EXPECT_EQ(cache.find(1, "token-a", 2059)->get(), alice.get());
  EXPECT_EQ(cache.find(1, "token-a", 2060), nullptr);  // expired, with its leeway
  EXPECT_EQ(cache.find(1, "token-a", 899), nullptr);   // not yet valid
  EXPECT_EQ(cache.find(2, "token-a", 1000), nullptr);  // another provider's (a reload's)
  EXPECT_EQ(cache.find(1, "token-b", 1000), nullptr);
  EXPECT_EQ(cache.find(1, "token-", 1000), nullptr);
}

TEST(TokenCache, ANewTokenTakesTheSlotOfTheOneBefore) {
  TokenCache cache(1);  // one slot: every token collides
  cache.remember(1, "token-a", 0, 100, verified(100));
  cache.remember(1, "token-b", 0, 100, verified(100));
  EXPECT_EQ(cache.find(1, "token-a", 10), nullptr);
  EXPECT_NE(cache.find(1, "token-b", 10), nullptr);
}

}  // namespace
}  // namespace sluice::auth
