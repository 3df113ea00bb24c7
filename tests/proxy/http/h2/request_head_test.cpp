// An HTTP/2 stream's request as the exchange reads it: the head made from the fields nghttp2
// decoded, with no HTTP/1.1 text in between, and the requests the HTTP/1.1 parser would refuse
// refused alike: exact outputs.
#include "proxy/http/h2/request_head.hpp"

#include <gtest/gtest.h>

#include <boost/asio/io_context.hpp>
#include <initializer_list>
#include <string>
#include <utility>
#include <vector>

namespace sluice::http::h2 {
namespace {

using Pairs = std::vector<std::pair<std::string, std::string>>;

/// A stream as the Session fills it, without a Session.
class ReadRequestHead : public testing::Test {
 protected:
  boost::asio::io_context io;  // before the stream, which takes its executor
  RequestStream stream{io.get_executor(), 1};
  HeadFields fields;
  RequestHead head;

  void request(std::string_view method, std::string_view authority, std::string_view path,
               std::initializer_list<std::pair<std::string_view, std::string_view>> regular = {}) {
    stream.method = method;
    stream.authority = authority;
    stream.path = path;
    for (const auto& [name, value] : regular) {
      stream.add_field(name, value);
    }
  }

  http::status read() { return read_request_head(stream, fields, head); }

  Pairs pairs() const {
    Pairs out;
    for (const pipeline::Header& field : head.head().headers()) {
      out.emplace_back(field.name, field.value);
    }
    return out;
  }
};

TEST_F(ReadRequestHead, PseudoHeaderFieldsMakeTheMethodTargetAndHost) {
  request("GET", "api.test:8443", "/items?page=2", {{"accept", "*/*"}, {"x-tier", "gold"}});
  stream.body_done = true;
  ASSERT_EQ(read(), http::status::ok);
  EXPECT_EQ(head.method, http::verb::get);
  EXPECT_EQ(head.method_string, "GET");
  EXPECT_EQ(head.target, "/items?page=2");
  EXPECT_EQ(head.version, kHttp11);
  EXPECT_EQ(pairs(), (Pairs{{"host", "api.test:8443"}, {"accept", "*/*"}, {"x-tier", "gold"}}));
  EXPECT_EQ(head.head().value_of(http::field::host), "api.test:8443");
  EXPECT_EQ(head.head().value_of("X-Tier"), "gold") << "found by name whatever its case";
  EXPECT_FALSE(head.chunked);
  EXPECT_FALSE(head.content_length);
}

TEST_F(ReadRequestHead, AuthorityWinsOverAHostFieldWhichIsDropped) {
  request("GET", "from-authority.test", "/",
          {{"host", "from-host.test"}, {"accept", "*/*"}, {"x-host", "kept"}});
  stream.body_done = true;
  ASSERT_EQ(read(), http::status::ok);
  EXPECT_EQ(pairs(),
            (Pairs{{"host", "from-authority.test"}, {"accept", "*/*"}, {"x-host", "kept"}}));
}

TEST_F(ReadRequestHead, AHostFieldStandsInWhenThereIsNoAuthority) {
  request("GET", "", "/", {{"host", "only-host.test"}});
  stream.body_done = true;
  ASSERT_EQ(read(), http::status::ok);
  EXPECT_EQ(pairs(), (Pairs{{"host", "only-host.test"}}));
}

TEST_F(ReadRequestHead, CookieCrumbsGoAsOneFieldAfterTheOthers) {
  request("GET", "a", "/", {{"accept", "*/*"}});
  stream.cookie = "a=1; b=2; c=3";  // as the Session joins them
  stream.body_done = true;
  ASSERT_EQ(read(), http::status::ok);
  EXPECT_EQ(pairs(), (Pairs{{"host", "a"}, {"accept", "*/*"}, {"cookie", "a=1; b=2; c=3"}}));
}

TEST_F(ReadRequestHead, KeepsAContentLength) {
  request("POST", "a", "/upload",
          {{"content-length", "300000"}, {"content-type", "application/octet-stream"}});
  ASSERT_EQ(read(), http::status::ok);
  EXPECT_EQ(head.content_length, 300000U);
  EXPECT_FALSE(head.chunked);
}

TEST_F(ReadRequestHead, HasNoBodyWhenTheHeaderBlockEndedTheStream) {
  request("POST", "a", "/empty");
  stream.body_done = true;
  ASSERT_EQ(read(), http::status::ok);
  EXPECT_FALSE(head.chunked);
  EXPECT_FALSE(head.content_length);
}

TEST_F(ReadRequestHead, IsOfUnknownLengthWhenABodyFollowsWithoutALength) {
  request("POST", "a", "/upload", {{"x-content-length", "5"}});
  ASSERT_EQ(read(), http::status::ok);
  EXPECT_TRUE(head.chunked) << "sent on to an HTTP/1.1 upstream chunked";
  EXPECT_FALSE(head.content_length) << "another field's name ending so is no length";
}

TEST_F(ReadRequestHead, TrimsValuesAsTheHttp1ParserDoes) {
  request("GET", "a", "/", {{"x-spaced", " \tvalue\t "}});
  stream.body_done = true;
  ASSERT_EQ(read(), http::status::ok);
  EXPECT_EQ(head.head().value_of("x-spaced"), "value");
}

TEST_F(ReadRequestHead, RefusesConnectAsNotImplemented) {
  request("CONNECT", "db.internal:5432", "");
  EXPECT_EQ(read(), http::status::not_implemented);
}

TEST_F(ReadRequestHead, RefusesWhatTheHttp1ParserRefuses) {
  const struct {
    const char* what;
    std::string_view method, authority, path;
    std::pair<std::string_view, std::string_view> field;
  } refused[] = {
      {"a fragment", "GET", "a", "/page#top", {"x", "1"}},
      {"a byte above 0x7F in the target", "GET", "a", "/caf\xc3\xa9", {"x", "1"}},
      {"a space in the target", "GET", "a", "/a b", {"x", "1"}},
      {"asterisk-form other than for OPTIONS", "GET", "a", "*", {"x", "1"}},
      {"a target in no form", "GET", "a", "page", {"x", "1"}},
      {"an authority that is no host", "GET", "a b", "/", {"x", "1"}},
      {"an IP literal that is no IPv6 address", "GET", "[4712::abcd::]", "/", {"x", "1"}},
      {"no authority and no Host", "GET", "", "/", {"x", "1"}},
      {"a Host field that is no host", "GET", "", "/", {"host", "a/b"}},
      {"a control character in a value", "GET", "a", "/", {"x", "a\x01z"}},
      {"DEL in a value", "GET", "a", "/", {"x", "a\x7fz"}},
  };
  for (const auto& request : refused) {
    RequestStream fresh{io.get_executor(), 3};
    fresh.method = request.method;
    fresh.authority = request.authority;
    fresh.path = request.path;
    fresh.add_field(request.field.first, request.field.second);
    fresh.body_done = true;
    EXPECT_EQ(read_request_head(fresh, fields, head), http::status::bad_request) << request.what;
  }
}

TEST_F(ReadRequestHead, TakesAsteriskFormForOptionsAndObsTextInAValue) {
  request("OPTIONS", "a", "*", {{"x-name", "caf\xc3\xa9"}});
  stream.body_done = true;
  ASSERT_EQ(read(), http::status::ok);
  EXPECT_EQ(head.target, "*");
  EXPECT_EQ(head.method, http::verb::options);
  EXPECT_EQ(head.head().value_of("x-name"), "caf\xc3\xa9");
}

TEST_F(ReadRequestHead, RefusesTwoHostFieldsWithoutAnAuthority) {
  request("GET", "", "/", {{"host", "a"}, {"host", "b"}});
  stream.body_done = true;
  EXPECT_EQ(read(), http::status::bad_request);
}

}  // namespace
}  // namespace sluice::http::h2
