// The request a forward-auth check describes, from the fields each gateway sends (SPEC §11).
#include "proxy/http/forward_auth.hpp"

#include <gtest/gtest.h>

#include <string>
#include <string_view>

namespace sluice::http {
namespace {

/// `fields` (CRLF-terminated lines) on a check of `GET /auth/check`, parsed as the HTTP/1.1
/// codec parses it, then described.
DescribedRequest described(std::string_view fields, std::string_view line = "GET /auth/check") {
  const std::string text =
      std::string(line) + " HTTP/1.1\r\nHost: sluice:8081\r\n" + std::string(fields) + "\r\n";
  HeadFields head;
  RequestParser parser(head);
  boost::beast::error_code ec;
  parser.put(boost::asio::buffer(text.data(), text.size()), ec);
  EXPECT_FALSE(ec) << ec.message();
  DescribedRequest result = describe(head_of(parser));
  // The views point into the parser's head, which goes with this frame: keep copies.
  static thread_local std::string method, target, host;
  method = result.method;
  target = result.target;
  host = result.host;
  result.method = method;
  result.target = target;
  result.host = host;
  return result;
}

TEST(ForwardAuth, ReadsTraefiksAndCaddysFields) {
  const DescribedRequest request = described(
      "X-Forwarded-Method: POST\r\nX-Forwarded-Proto: https\r\nX-Forwarded-Host: api.test\r\n"
      "X-Forwarded-Uri: /v1/chat?model=x\r\nX-Forwarded-For: 203.0.113.9\r\n");
  EXPECT_EQ(request.problem, "");
  EXPECT_EQ(request.method, "POST");
  EXPECT_EQ(request.target, "/v1/chat?model=x");
  EXPECT_EQ(request.host, "api.test");
}

TEST(ForwardAuth, ReadsNginxsFieldsWithTheCheckHostWhenNoForwardedHost) {
  const DescribedRequest request =
      described("X-Original-Method: DELETE\r\nX-Original-URI: /items/7\r\n");
  EXPECT_EQ(request.problem, "");
  EXPECT_EQ(request.method, "DELETE");
  EXPECT_EQ(request.target, "/items/7");
  EXPECT_EQ(request.host, "sluice:8081");
}

TEST(ForwardAuth, TakesTheCheckItselfAsEnvoysExtAuthzSendsIt) {
  const DescribedRequest request = described("", "PUT /api/x?y=1");
  EXPECT_EQ(request.problem, "");
  EXPECT_EQ(request.method, "PUT");
  EXPECT_EQ(request.target, "/api/x?y=1");
  EXPECT_EQ(request.host, "sluice:8081");
}

TEST(ForwardAuth, BothSpellingsMayBeSentWhenTheyAgree) {
  const DescribedRequest request = described(
      "X-Forwarded-Method: GET\r\nX-Original-Method: GET\r\nX-Forwarded-Uri: /a\r\n"
      "X-Original-URI: /a\r\n");
  EXPECT_EQ(request.problem, "");
  EXPECT_EQ(request.target, "/a");
}

TEST(ForwardAuth, NamesTheFieldsThatContradictEachOther) {
  EXPECT_EQ(described("X-Forwarded-Method: GET\r\nX-Original-Method: POST\r\n").problem,
            "X-Forwarded-Method and X-Original-Method disagree");
  EXPECT_EQ(described("X-Forwarded-Uri: /a\r\nX-Original-URI: /b\r\n").problem,
            "X-Forwarded-Uri and X-Original-URI disagree");
  EXPECT_EQ(described("X-Forwarded-Host: a.test\r\nX-Forwarded-Host: b.test\r\n").problem,
            "X-Forwarded-Host is sent twice with different values");
}

TEST(ForwardAuth, NamesTheFieldsThatDoNotParse) {
  EXPECT_EQ(described("X-Forwarded-Method: GE T\r\n").problem,
            "the method (X-Forwarded-Method or X-Original-Method) is not an HTTP method");
  EXPECT_EQ(described("X-Forwarded-Uri: api/x\r\n").problem,
            "the URI (X-Forwarded-Uri or X-Original-URI) is not a path and query (\"/...\")");
  EXPECT_EQ(described("X-Original-URI: /a#frag\r\n").problem,
            "the URI (X-Forwarded-Uri or X-Original-URI) is not a path and query (\"/...\")");
  EXPECT_EQ(described("X-Forwarded-Host: a b\r\n").problem,
            "X-Forwarded-Host is not a host[:port]");
  EXPECT_EQ(described("X-Forwarded-Proto: gopher\r\n").problem,
            "X-Forwarded-Proto is none of http, https, ws, wss");
}

}  // namespace
}  // namespace sluice::http
