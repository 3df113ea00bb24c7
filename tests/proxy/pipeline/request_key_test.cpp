#include "proxy/pipeline/request_key.hpp"

#include <gtest/gtest.h>

#include <vector>

#include "config/read_limiters.hpp"

namespace sluice::pipeline {
namespace {

config::KeySpec key(std::string_view text) {
  std::string problem;
  return *config::parse_key(text, problem);
}

struct HeadersOnly {
  std::vector<Header> headers;
  RequestView view(std::string_view target = "/") const {
    return {.method = "GET", .target = target, .host = "h", .headers = headers, .peer = {}};
  }
};

std::optional<std::string> text_of(std::string_view spec, const RequestView& request,
                                   std::string_view client = "203.0.113.9",
                                   unsigned ipv6_prefix = 128) {
  std::string out;
  if (!build_key(key(spec), ipv6_prefix, request, *IpAddress::parse(client), "api", nullptr, out)) {
    return std::nullopt;
  }
  return out;
}

TEST(BuildKey, FormsEveryKind) {
  const HeadersOnly request{{{"X-Api-Key", "k-123"},
                             {"Authorization", "Bearer tok.en"},
                             {"Cookie", "theme=dark; session=s-9"}}};
  const RequestView view = request.view("/list?page=2&user=ann");
  EXPECT_EQ(text_of("ip", view), "203.0.113.9");
  EXPECT_EQ(text_of("header:X-Api-Key", view), "k-123");
  EXPECT_EQ(text_of("header:x-api-key", view), "k-123");  // header names ignore case
  EXPECT_EQ(text_of("bearer", view), "tok.en");
  EXPECT_EQ(text_of("cookie:session", view), "s-9");
  EXPECT_EQ(text_of("query:user", view), "ann");
  EXPECT_EQ(text_of("route", view), "api");
  EXPECT_EQ(text_of("global", view), "*");
  EXPECT_EQ(text_of("ip+header:X-Api-Key", view), "203.0.113.9\x1fk-123");
}

TEST(BuildKey, CannotFormAKeyWhosePartIsMissing) {
  const HeadersOnly request{{{"Authorization", "Basic dXNlcjpwYXNz"}}};
  const RequestView view = request.view("/list?pager=2");
  EXPECT_FALSE(text_of("header:X-Api-Key", view).has_value());
  EXPECT_FALSE(text_of("bearer", view).has_value());  // not a bearer token
  EXPECT_FALSE(text_of("cookie:session", view).has_value());
  EXPECT_FALSE(text_of("query:page", view).has_value());  // "pager" is another parameter
  EXPECT_FALSE(text_of("ip+header:X-Api-Key", view).has_value());
}

TEST(BuildKey, GroupsIpv6ClientsByPrefix) {
  const HeadersOnly request;
  EXPECT_EQ(text_of("ip", request.view(), "2001:db8:1:2:aaaa::1", 64), "2001:db8:1:2::");
  EXPECT_EQ(text_of("ip", request.view(), "2001:db8:1:2:bbbb::2", 64), "2001:db8:1:2::");
  EXPECT_EQ(text_of("ip", request.view(), "192.0.2.1", 64), "192.0.2.1");  // IPv4 untouched
}

TEST(BuildKey, CompositePartsCannotBeForgedWithTheSeparatorText) {
  // "a+b" in one header and "c" in the other is not "a" and "b+c".
  const HeadersOnly first{{{"X-A", "a+b"}, {"X-B", "c"}}};
  const HeadersOnly second{{{"X-A", "a"}, {"X-B", "b+c"}}};
  EXPECT_NE(text_of("header:X-A+header:X-B", first.view()),
            text_of("header:X-A+header:X-B", second.view()));
}

TEST(KeyParts, ReadCookiesQueriesAndBearerTokens) {
  EXPECT_EQ(cookie_value("a=1;b=2", "b"), "2");
  EXPECT_EQ(cookie_value("a=1; b=", "b"), "");
  EXPECT_FALSE(cookie_value("ab=1", "a").has_value());
  EXPECT_EQ(query_value("x=1&y=2&x=3", "x"), "1");
  EXPECT_EQ(query_value("flag&y=2", "flag"), "");
  EXPECT_EQ(bearer_token("bearer  abc "), "abc");
  EXPECT_FALSE(bearer_token("Bearer ").has_value());
  EXPECT_FALSE(bearer_token("Token abc").has_value());
}

}  // namespace
}  // namespace sluice::pipeline
