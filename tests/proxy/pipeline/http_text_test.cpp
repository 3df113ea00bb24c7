// HTTP's text rules that the pipeline and the proxy share: optional whitespace, and names
// compared without regard to ASCII case.
#include "proxy/pipeline/http_text.hpp"

#include <gtest/gtest.h>

namespace sluice::pipeline {
namespace {

TEST(TrimWhitespace, DropsSpacesAndTabsAtBothEndsOnly) {
  EXPECT_EQ(trim_whitespace(" \t close \t"), "close");
  EXPECT_EQ(trim_whitespace("keep-alive, Upgrade"), "keep-alive, Upgrade");
  EXPECT_EQ(trim_whitespace("a \t b"), "a \t b");
  EXPECT_EQ(trim_whitespace(" \t "), "");
  EXPECT_EQ(trim_whitespace(""), "");
  EXPECT_EQ(trim_whitespace("\r\nx\r\n"), "\r\nx\r\n");  // only OWS: spaces and tabs
}

TEST(EqualIgnoringCase, ComparesAsciiLettersWithoutCase) {
  EXPECT_TRUE(equal_ignoring_case("X-Api-Key", "x-api-key"));
  EXPECT_TRUE(equal_ignoring_case("HOST", "host"));
  EXPECT_TRUE(equal_ignoring_case("", ""));
  EXPECT_FALSE(equal_ignoring_case("X-Api-Key", "X-Api-Keys"));
  EXPECT_FALSE(equal_ignoring_case("X-Api-Key", "X_Api_Key"));
  // Views that are not NUL-terminated compare only their own characters.
  const std::string_view text = "hostname";
  EXPECT_TRUE(equal_ignoring_case(text.substr(0, 4), "HOST"));
}

}  // namespace
}  // namespace sluice::pipeline
