// The fast writers' escape rule, checked against Boost.JSON's parser: whatever the bytes, the
// text parses, and well-formed UTF-8 reads back unchanged.
#include "proxy/telemetry/json_escape.hpp"

#include <gtest/gtest.h>

#include <boost/json/parse.hpp>
#include <boost/json/value.hpp>
#include <string>

namespace sluice::telemetry {
namespace {

std::string escaped(std::string_view text) {
  fmt::memory_buffer out;
  append_json_escaped(out, text);
  return fmt::to_string(out);
}

/// What Boost.JSON reads from `text` escaped and quoted; fails the test if it does not parse.
std::string read_back(std::string_view text) {
  const std::string json = '"' + escaped(text) + '"';
  boost::json::error_code error;
  const boost::json::value value = boost::json::parse(json, error);
  EXPECT_FALSE(error) << error.message() << " in " << json;
  return error ? std::string() : std::string(value.as_string());
}

TEST(JsonEscape, LeavesPlainTextAsItIs) {
  EXPECT_EQ(escaped("/api/orders?page=2&sort=-date"), "/api/orders?page=2&sort=-date");
  EXPECT_EQ(escaped("caf\xC3\xA9 \xE2\x82\xAC \xF0\x9F\x98\x80"),
            "caf\xC3\xA9 \xE2\x82\xAC \xF0\x9F\x98\x80");
  EXPECT_EQ(escaped(""), "");
}

TEST(JsonEscape, EscapesQuotesBackslashesAndControlCharacters) {
  EXPECT_EQ(escaped(R"(a"b\c)"), R"(a\"b\\c)");
  EXPECT_EQ(escaped(std::string("\0\x01\n\r\t\x1f\x7f", 7)),
            R"(\u0000\u0001\u000a\u000d\u0009\u001f\u007f)");
  EXPECT_EQ(escaped("a\xE2\x80\xA8z\xE2\x80\xA9"), R"(a\u2028z\u2029)");
}

TEST(JsonEscape, ReplacesEveryByteThatIsNotUtf8) {
  EXPECT_EQ(escaped("a\xFF"
                    "b"),
            R"(a\ufffdb)");
  EXPECT_EQ(escaped("\xC3"), R"(\ufffd)");                                // cut short
  EXPECT_EQ(escaped("\xC0\xAF"), R"(\ufffd\ufffd)");                      // overlong '/'
  EXPECT_EQ(escaped("\xED\xA0\x80"), R"(\ufffd\ufffd\ufffd)");            // a surrogate
  EXPECT_EQ(escaped("\xF4\x90\x80\x80"), R"(\ufffd\ufffd\ufffd\ufffd)");  // above U+10FFFF
  EXPECT_EQ(escaped("\x80x"), R"(\ufffdx)");  // a lone continuation byte
}

TEST(JsonEscape, ReadsBackEveryCharacterThatIsWellFormed) {
  const std::string tricky[] = {
      R"(quote " and backslash \)",
      std::string("nul \0 inside", 12),
      "tab\tnewline\ncr\r",
      "del \x7f",
      "line\xE2\x80\xA8separator",
      "paragraph\xE2\x80\xA9separator",
      "two bytes \xC3\xA9, three \xE2\x82\xAC, four \xF0\x9F\x98\x80",
      "\xEF\xBF\xBF and \xF4\x8F\xBF\xBF"};  // the last characters of their lengths
  for (const std::string& text : tricky) {
    EXPECT_EQ(read_back(text), text);
  }
  for (int byte = 0; byte < 0x80; ++byte) {
    const std::string text(1, static_cast<char>(byte));
    EXPECT_EQ(read_back(text), text) << "byte " << byte;
  }
}

TEST(JsonEscape, GivesJsonThatParsesForAnyTwoBytes) {
  // Every pair of bytes: well-formed or not, the text parses, and what is not UTF-8 is U+FFFD.
  for (int first = 0; first < 256; ++first) {
    for (int second = 0; second < 256; ++second) {
      const std::string text{static_cast<char>(first), static_cast<char>(second)};
      const std::string back = read_back(text);
      if (first < 0x80 && second < 0x80) {
        ASSERT_EQ(back, text) << first << " " << second;
      } else if (first >= 0xC2 && first <= 0xDF && second >= 0x80 && second <= 0xBF) {
        ASSERT_EQ(back, text) << first << " " << second;
      } else {
        ASSERT_NE(back.find("\xEF\xBF\xBD"), std::string::npos) << first << " " << second;
      }
    }
  }
}

}  // namespace
}  // namespace sluice::telemetry
