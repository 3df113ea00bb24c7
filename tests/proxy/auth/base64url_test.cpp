// base64url without padding, strictly: RFC 4648's test vectors, and what a lenient decoder
// would let through refused.
#include "proxy/auth/base64url.hpp"

#include <gtest/gtest.h>

#include <string>

namespace sluice::auth {
namespace {

TEST(Base64url, DecodesAndEncodesRfc4648sVectors) {
  const std::pair<std::string, std::string> vectors[] = {
      {"", ""},           {"f", "Zg"},          {"fo", "Zm8"},         {"foo", "Zm9v"},
      {"foob", "Zm9vYg"}, {"fooba", "Zm9vYmE"}, {"foobar", "Zm9vYmFy"}};
  for (const auto& [bytes, text] : vectors) {
    std::string decoded;
    EXPECT_TRUE(decode_base64url(text, decoded)) << text;
    EXPECT_EQ(decoded, bytes);
    EXPECT_EQ(encode_base64url(bytes), text);
  }
}

TEST(Base64url, UsesTheUrlAlphabet) {
  std::string decoded;
  ASSERT_TRUE(decode_base64url("-_8", decoded));
  EXPECT_EQ(decoded, "\xfb\xff");
  EXPECT_EQ(encode_base64url("\xfb\xff"), "-_8");
}

TEST(Base64url, RefusesWhatAStrictReaderMust) {
  std::string decoded;
  // padding, the other alphabet, a space, a length no encoding has, bits left set ("fo" is Zm8)
  for (const char* bad : {"Zg==", "Zg=", "+/8", "Zm9v YmFy", "Z", "Zm9vY", "Zh", "Zm9"}) {
    EXPECT_FALSE(decode_base64url(bad, decoded)) << bad;
  }
}

}  // namespace
}  // namespace sluice::auth
