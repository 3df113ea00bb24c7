#include "config/url.hpp"

#include <gtest/gtest.h>

namespace sluice::config {
namespace {

TEST(RedactUrl, HidesThePasswordOnly) {
  EXPECT_EQ(redact_url("redis://:hunter2@cache:6379/0"), "redis://:***@cache:6379/0");
  EXPECT_EQ(redact_url("redis://user:hunter2@cache:6379/0"), "redis://user:***@cache:6379/0");
  EXPECT_EQ(redact_url("redis://token@cache/0"), "redis://***@cache/0");
  EXPECT_EQ(redact_url("redis://127.0.0.1:6379/0"), "redis://127.0.0.1:6379/0");
  EXPECT_EQ(redact_url("http://api/path@x"), "http://api/path@x");
}

}  // namespace
}  // namespace sluice::config
