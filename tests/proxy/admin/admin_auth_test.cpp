// Who may write on the admin port (SPEC §10); the endpoints' own tests send the requests.
#include "proxy/admin/admin_auth.hpp"

#include <gtest/gtest.h>

namespace sluice::admin {
namespace {

TEST(AdminAuth, ComparesSecretsWhole) {
  EXPECT_TRUE(same_secret("s3cret", "s3cret"));
  EXPECT_FALSE(same_secret("s3cre", "s3cret"));
  EXPECT_FALSE(same_secret("s3crett", "s3cret"));
  EXPECT_FALSE(same_secret("S3cret", "s3cret"));
  EXPECT_FALSE(same_secret("", "s3cret"));
  EXPECT_FALSE(same_secret("s3cret", ""));
}

TEST(AdminAuth, KnowsLoopbackAddresses) {
  EXPECT_TRUE(loopback_host("127.0.0.1"));
  EXPECT_TRUE(loopback_host("127.1.2.3"));
  EXPECT_TRUE(loopback_host("::1"));
  EXPECT_TRUE(loopback_host("localhost"));
  EXPECT_FALSE(loopback_host("0.0.0.0"));
  EXPECT_FALSE(loopback_host("::"));
  EXPECT_FALSE(loopback_host("10.0.0.1"));
  EXPECT_FALSE(loopback_host("admin.internal"));
}

}  // namespace
}  // namespace sluice::admin
