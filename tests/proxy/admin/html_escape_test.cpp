// The page's escape: markup a client or a file chose comes out as text.
#include "proxy/admin/html_escape.hpp"

#include <gtest/gtest.h>

namespace sluice::admin {
namespace {

TEST(HtmlEscaped, TurnsMarkupIntoText) {
  EXPECT_EQ(html_escaped("<script>alert(1)</script>"), "&lt;script&gt;alert(1)&lt;/script&gt;");
  EXPECT_EQ(html_escaped(R"("><img src=x onerror='go()'>)"),
            "&quot;&gt;&lt;img src=x onerror=&#39;go()&#39;&gt;");
  EXPECT_EQ(html_escaped("a&amp;b"), "a&amp;amp;b");  // an entity stays the text it was
}

TEST(HtmlEscaped, LeavesOtherTextAlone) {
  EXPECT_EQ(html_escaped(""), "");
  EXPECT_EQ(html_escaped("jwt:sub/42 + 192.0.2.7 été"), "jwt:sub/42 + 192.0.2.7 été");
  EXPECT_EQ(html_escaped(std::string_view("a\0b", 3)), std::string("a\0b", 3));
}

}  // namespace
}  // namespace sluice::admin
