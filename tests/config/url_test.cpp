#include "config/url.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <boost/url/parse.hpp>
#include <cctype>
#include <string>
#include <vector>

namespace sluice::config {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

/// Every byte but letters and digits as %XX.
std::string percent_encoded(std::string_view text) {
  constexpr std::string_view kHex = "0123456789ABCDEF";
  std::string encoded;
  for (const char c : text) {
    const auto byte = static_cast<unsigned char>(c);
    if (std::isalnum(byte) != 0) {
      encoded += c;
    } else {
      encoded += {'%', kHex[byte >> 4U], kHex[byte & 0xFU]};
    }
  }
  return encoded;
}

TEST(RedactUrl, HidesThePasswordOnly) {
  EXPECT_EQ(redact_url("redis://:hunter2@cache:6379/0"), "redis://:***@cache:6379/0");
  EXPECT_EQ(redact_url("redis://user:hunter2@cache:6379/0"), "redis://user:***@cache:6379/0");
  EXPECT_EQ(redact_url("redis://127.0.0.1:6379/0"), "redis://127.0.0.1:6379/0");
  EXPECT_EQ(redact_url("http://[::1]:9000/"), "http://[::1]:9000/");
  EXPECT_EQ(redact_url("redis://us%3Aer:p%40ss@[::1]:7000/2"), "redis://us%3Aer:***@[::1]:7000/2");
}

TEST(RedactUrl, HidesALoneUserAsAToken) {
  EXPECT_EQ(redact_url("redis://token@cache/0"), "redis://***@cache/0");
  EXPECT_EQ(redact_url("redis://@cache/0"), "redis://***@cache/0");
}

TEST(RedactUrl, HidesQueriesAndFragments) {
  EXPECT_EQ(redact_url("redis://cache/0?password=hunter2"), "redis://cache/0?***");
  EXPECT_EQ(redact_url("http://api:9000/#hunter2"), "http://api:9000/#***");
}

TEST(RedactUrl, HidesWholePasswordsWrittenWithoutPercentEncoding) {
  // Each of these puts part of the password after the authority, or does not parse at all.
  EXPECT_EQ(redact_url("redis://app:s3cr@t@cache:6380/3"), "redis://***@cache:6380");
  EXPECT_EQ(redact_url("redis://app:pa/ss@cache:6380/3"), "redis://***@cache:6380");
  EXPECT_EQ(redact_url("redis://:12/34@cache/0"), "redis://***@cache");
  EXPECT_EQ(redact_url("redis://:pa?ss@cache"), "redis://***@cache");
  EXPECT_EQ(redact_url("redis://:12#34@cache"), "redis://***@cache");
  EXPECT_EQ(redact_url("redis://:100%sure@[::1]:7000/0"), "redis://***@[::1]:7000");
  EXPECT_EQ(redact_url("redis://:two words@cache"), "redis://***@cache");
  EXPECT_EQ(redact_url("http://api/path@x"), "http://***@x");  // ambiguous: shown safely
  EXPECT_EQ(redact_url("user:hunter2@cache:6379"), "***@cache:6379");
}

TEST(RedactUrl, ShowsSchemeAndHostOfMalformedUrlsWithoutThrowing) {
  EXPECT_EQ(redact_url("redis://:hunter2"), "redis://");  // a password, its host forgotten
  EXPECT_EQ(redact_url("http://api:port"), "http://api");
  EXPECT_EQ(redact_url("http://[::1"), "http://");
  EXPECT_EQ(redact_url("127.0.0.1:9000"), "127.0.0.1:9000");
  EXPECT_EQ(redact_url(""), "");
  EXPECT_EQ(redact_url("@"), "***@");
  EXPECT_EQ(redact_url("://@:"), "***@");
}

TEST(RedactUrl, NeverShowsAPasswordOfReservedCharacters) {
  // Each between "s3" and "x", so that the scheme's "//" or an IPv6 "::" is not taken for it.
  const std::vector<std::string> passwords{"s3x",    "s3@x", "s3/x",  "s3:x",        "s3%x",
                                           "s3?x",   "s3#x", "s3@@x", "s3//x",       "s3::x",
                                           "s3%40x", "s3 x", "s3@/x", "s3a@b/c:d%ex"};
  for (const std::string& password : passwords) {
    const std::string encoded = percent_encoded(password);
    for (const std::string& written : {password, encoded}) {
      for (const std::string& url :
           {"redis://:" + written + "@cache:6379/0", "redis://app:" + written + "@cache:6379/0",
            "http://u:" + written + "@[::1]:80/"}) {
        const std::string shown = redact_url(url);
        EXPECT_THAT(shown, Not(HasSubstr("s3"))) << url;
        EXPECT_THAT(shown, HasSubstr("***")) << url;
      }
      // As a lone user (a token) it is hidden too; a raw ':' makes its start a user name.
      const std::string token = "redis://" + written + "@cache/0";
      EXPECT_THAT(redact_url(token), Not(HasSubstr(written))) << token;
      EXPECT_THAT(redact_url(token), HasSubstr("***")) << token;
    }
  }
}

TEST(ParseUrl, RefusesAPathThatDoesNotFollowTheAuthorityWithASlash) {
  EXPECT_TRUE(parse_url("redis://cache:6379/0").has_value());
  EXPECT_TRUE(parse_url("redis://cache").has_value());
  EXPECT_FALSE(parse_url("redis://:secret").has_value());
  EXPECT_FALSE(parse_url("cache:6379/0 x").has_value());
}

TEST(HasStrayAt, FindsAnAtOutsideTheUserinfo) {
  const auto parsed = [](std::string_view text) { return boost::urls::parse_uri(text).value(); };
  EXPECT_FALSE(has_stray_at(parsed("redis://u:p@cache/0")));
  EXPECT_FALSE(has_stray_at(parsed("redis://u:p%40q@cache/0")));
  EXPECT_TRUE(has_stray_at(parsed("redis://u:p@q/@cache/0")));
  EXPECT_TRUE(has_stray_at(parsed("http://cache/a@b")));
  EXPECT_TRUE(has_stray_at(parsed("http://cache/?a@b")));
  EXPECT_TRUE(has_stray_at(parsed("http://cache/#a@b")));
}

}  // namespace
}  // namespace sluice::config
