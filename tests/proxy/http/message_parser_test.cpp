#include "proxy/http/message_parser.hpp"

#include <gtest/gtest.h>

#include <array>
#include <boost/asio/buffer.hpp>
#include <string>
#include <string_view>

namespace sluice::http {
namespace {

namespace http = boost::beast::http;
using boost::beast::error_code;

/// Feeds `text` to `parser` as a read loop would: what the parser does not use stays for the
/// next call. Returns the bytes left over and the last error other than need_more.
template <bool isRequest>
error_code feed(MessageParser<isRequest>& parser, std::string_view& text) {
  error_code ec;
  const std::size_t used = parser.put(boost::asio::buffer(text.data(), text.size()), ec);
  text.remove_prefix(used);
  return ec;
}

TEST(MessageParser, KeepsTheRequestLineAndTheFieldsInOrder) {
  HeadFields head;
  RequestParser parser(head);
  std::string_view text =
      "POST /api/items?page=2 HTTP/1.1\r\nHost: example.test\r\nX-Api-Key: k-1\r\n"
      "x-api-key: k-2\r\nContent-Length: 0\r\n\r\n";
  EXPECT_FALSE(feed(parser, text));
  ASSERT_TRUE(parser.is_done());
  EXPECT_EQ(parser.method(), http::verb::post);
  EXPECT_EQ(parser.method_string(), "POST");
  EXPECT_EQ(parser.target(), "/api/items?page=2");
  EXPECT_EQ(parser.version(), 11u);
  EXPECT_TRUE(parser.keep_alive());
  ASSERT_EQ(head.size(), 4u);
  EXPECT_EQ(head.id(0), http::field::host);
  EXPECT_EQ(head.at(0).name, "Host");
  EXPECT_EQ(head.at(0).value, "example.test");
  EXPECT_EQ(head.id(1), http::field::unknown);
  EXPECT_EQ(head.at(2).name, "x-api-key");
  EXPECT_EQ(head.value_of(http::field::host), "example.test");
  EXPECT_EQ(head.value_of("X-API-KEY"), "k-1");  // the first of two, whatever its case
  EXPECT_EQ(head.value_of(http::field::content_length), "0");
  EXPECT_EQ(head.value_of("X-Missing"), "");
  EXPECT_EQ(head.headers().size(), 4u);
}

TEST(MessageParser, AHeadLargerThanTheStorageKeepsEveryView) {
  // The storage grows while the head is parsed: views are made only once it is whole.
  std::string text = "GET / HTTP/1.0\r\n";  // (1.0: no Host field needed)
  for (int i = 0; i < 40; ++i) {
    text += "X-Field-" + std::to_string(i) + ": " +
            std::string(100, static_cast<char>('a' + i % 26)) + "\r\n";
  }
  text += "\r\n";
  HeadFields head;
  RequestParser parser(head);
  parser.header_limit(16 * 1024);
  std::string_view rest = text;
  EXPECT_FALSE(feed(parser, rest));
  ASSERT_EQ(head.size(), 40u);
  for (std::size_t i = 0; i < head.size(); ++i) {
    EXPECT_EQ(head.at(i).name, "X-Field-" + std::to_string(i));
    EXPECT_EQ(head.at(i).value, std::string(100, static_cast<char>('a' + i % 26)));
  }
  EXPECT_EQ(parser.target(), "/");
}

TEST(MessageParser, TrimGivesBackWhatALargeHeadTookAndKeepsAUsualOne) {
  HeadFields head;
  const auto parse = [&](const std::string& text) {
    RequestParser parser(head);
    parser.header_limit(64 * 1024);
    std::string_view rest = text;
    EXPECT_FALSE(feed(parser, rest));
    EXPECT_TRUE(parser.is_header_done());
  };
  parse("GET / HTTP/1.1\r\nHost: x\r\n\r\n");
  head.trim();
  const std::size_t usual = head.storage_bytes();
  EXPECT_GT(usual, 0u);  // kept for the next request
  EXPECT_LE(usual, 2 * HeadFields::kKeptTextBytes);

  std::string large = "GET / HTTP/1.1\r\nHost: x\r\n";
  for (int i = 0; i < 200; ++i) {
    large += "X-Field-" + std::to_string(i) + ": " + std::string(100, 'v') + "\r\n";
  }
  parse(large + "\r\n");
  EXPECT_GT(head.storage_bytes(), 20'000u);
  head.trim();
  EXPECT_EQ(head.storage_bytes(), 0u);
  parse("GET / HTTP/1.1\r\nHost: x\r\n\r\n");  // and it still works
  EXPECT_EQ(head.value_of(http::field::host), "x");
}

TEST(MessageParser, TheNextMessageReplacesTheLastOnTheSameStorage) {
  HeadFields head;
  {
    RequestParser first(head);
    std::string_view text = "GET /one HTTP/1.1\r\nHost: x\r\nA: 1\r\nB: 2\r\n\r\n";
    EXPECT_FALSE(feed(first, text));
  }
  RequestParser second(head);
  std::string_view text = "DELETE /two HTTP/1.0\r\nC: 3\r\n\r\n";
  EXPECT_FALSE(feed(second, text));
  EXPECT_EQ(second.method(), http::verb::delete_);
  EXPECT_EQ(second.target(), "/two");
  EXPECT_EQ(second.version(), 10u);
  EXPECT_FALSE(second.keep_alive());  // HTTP/1.0 without keep-alive
  ASSERT_EQ(head.size(), 1u);
  EXPECT_EQ(head.at(0).name, "C");
  EXPECT_EQ(head.value_of("A"), "");
}

TEST(MessageParser, AChunkedBodyFillsTheRoomAndAsksForMoreAndItsTrailerIsDropped) {
  HeadFields head;
  ResponseParser parser(head);
  // A trailer long enough to make the storage grow, had it been kept: under ASan, a view
  // into the old storage would be caught below.
  const std::string message =
      "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nServer: up\r\n\r\n"
      "5\r\nhello\r\n6\r\n world\r\n0\r\nX-Trailer: " +
      std::string(4000, 't') + "\r\n\r\n";
  std::string_view text = message;
  EXPECT_FALSE(feed(parser, text));  // the head
  ASSERT_TRUE(parser.is_header_done());
  EXPECT_EQ(parser.status(), 200u);
  EXPECT_EQ(parser.result(), http::status::ok);
  EXPECT_EQ(parser.reason(), "OK");
  EXPECT_TRUE(parser.chunked());
  const std::string_view server = head.value_of(http::field::server);

  std::array<char, 8> room{};
  std::string body;
  while (!parser.is_done()) {
    parser.body_into(room);
    const error_code ec = feed(parser, text);
    ASSERT_TRUE(!ec || ec == http::error::need_buffer) << ec.message();
    body.append(room.data(), room.size() - parser.room_left());
  }
  EXPECT_EQ(body, "hello world");
  EXPECT_TRUE(text.empty());
  // The trailer is not a field of the head, and the head's views still point where they did.
  EXPECT_EQ(head.size(), 2u);
  EXPECT_EQ(head.value_of("X-Trailer"), "");
  EXPECT_EQ(head.value_of(http::field::server).data(), server.data());
  EXPECT_EQ(server, "up");
}

/// Parses a request's chunked body from `body` until the parser needs more bytes than `body`
/// holds, and returns whether the bytes it left prove the framing wrong.
bool framing_broken_after(std::string_view body) {
  HeadFields head;
  RequestParser parser(head);
  const std::string message =
      "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n" + std::string(body);
  std::string_view text = message;
  std::array<char, 64> room{};
  for (;;) {
    parser.body_into(room);
    const std::size_t before = text.size();
    const error_code ec = feed(parser, text);
    if (ec == http::error::need_more || (!ec && text.size() == before && !parser.is_done())) {
      return parser.framing_broken(text);
    }
    if (ec && ec != http::error::need_buffer) {
      ADD_FAILURE() << "Beast refused it itself: " << ec.message();
      return true;
    }
    if (parser.is_done()) {
      return false;
    }
  }
}

TEST(MessageParser, SaysWhenTheBytesBeastWaitsBehindProveAChunkBroken) {
  // Beast asks for more here; no byte to come could mend these.
  EXPECT_TRUE(framing_broken_after("5\r\nABCDE0\r\n"));  // no CRLF after the data
  EXPECT_TRUE(framing_broken_after("5\r\nABCDEX"));
  EXPECT_TRUE(framing_broken_after("5;a=\"abc\";b=\"def; ghi\r\nhello\r\n"));  // an open quote
  EXPECT_TRUE(framing_broken_after("5\r\nhello\r\n0;x=\"y\r\n"));
  EXPECT_TRUE(framing_broken_after("5\nhel"));  // a bare LF ends the size line
  // These only need more bytes.
  EXPECT_FALSE(framing_broken_after(""));
  EXPECT_FALSE(framing_broken_after("5"));
  EXPECT_FALSE(framing_broken_after("5;a=\"ope"));
  EXPECT_FALSE(framing_broken_after("5\r\nABC"));
  EXPECT_FALSE(framing_broken_after("5\r\nABCDE\r"));
  EXPECT_FALSE(framing_broken_after("5\r\nABCDE\r\n1"));
  EXPECT_FALSE(framing_broken_after("5\r\nABCDE\r\n0\r\n"));  // the trailer section to come
  EXPECT_FALSE(framing_broken_after("5\r\nABCDE\r\n0\r\nX-T: 1\r\n"));
}

TEST(MessageParser, ABodyWithNoRoomStopsWithNeedBuffer) {
  HeadFields head;
  ResponseParser parser(head);
  std::string_view text = "HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\nabc";
  EXPECT_FALSE(feed(parser, text));
  EXPECT_EQ(feed(parser, text), http::error::need_buffer);
  EXPECT_EQ(text, "abc");
  std::array<char, 3> room{};
  parser.body_into(room);
  EXPECT_FALSE(feed(parser, text));
  EXPECT_TRUE(parser.is_done());
  EXPECT_EQ(std::string_view(room.data(), room.size()), "abc");
  EXPECT_EQ(parser.room_left(), 0u);
}

TEST(MessageParser, BeastsChecksStillRefuseBadFraming) {
  for (const std::string_view bad :
       {"GET / HTTP/1.1\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n",
        "GET / HTTP/1.1\r\nBad Name: x\r\n\r\n", "GET / HTTP/1.1\r\nA: x\ry\r\n\r\n",
        "GET / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n"}) {
    HeadFields head;
    RequestParser parser(head);
    std::string_view text = bad;
    error_code ec = feed(parser, text);
    if (!ec && parser.is_header_done() && !parser.is_done()) {
      ec = feed(parser, text);  // the body's framing
    }
    EXPECT_TRUE(ec && ec != http::error::need_more) << bad;
  }
}

/// Parses `text` as a whole message head; its error, other than need_more.
template <bool isRequest>
error_code parse_head(HeadFields& head, std::string_view text) {
  MessageParser<isRequest> parser(head);
  error_code ec = feed(parser, text);
  return ec == http::error::need_more ? error_code{} : ec;
}

TEST(MessageParser, RefusesFoldedFieldsInARequestAndTakesEmptyOrSpacedOnes) {
  HeadFields head;
  for (const std::string_view folded : {"GET / HTTP/1.1\r\nHost: a\r\nX: one\r\n two\r\n\r\n",
                                        "GET / HTTP/1.1\r\nHost: a\r\nX:\r\n two\r\n\r\n",
                                        "GET / HTTP/1.1\r\nHost: a\r\nX: \r\n\ttwo\r\n\r\n"}) {
    EXPECT_EQ(parse_head<true>(head, folded), http::error::bad_value) << folded;
  }
  for (const std::string_view fine :
       {"GET / HTTP/1.1\r\nHost: a\r\nX:\r\n\r\n", "GET / HTTP/1.1\r\nHost: a\r\nX: \t \r\n\r\n",
        "GET / HTTP/1.1\r\nHost: a\r\nX:\t \tv w \r\n\r\n"}) {
    EXPECT_FALSE(parse_head<true>(head, fine)) << fine;
  }
  EXPECT_EQ(head.value_of("X"), "v w");
  // A response's folded field is joined with a space, as RFC 9112 §5.2 allows a proxy.
  EXPECT_FALSE(parse_head<false>(head, "HTTP/1.1 204 No Content\r\nX: one\r\n two\r\n\r\n"));
  EXPECT_EQ(head.value_of("X"), "one two");
}

TEST(MessageParser, KeepsAnAbsoluteFormTargetAsItsPathAndItsAuthorityAsTheHost) {
  HeadFields head;
  RequestParser parser(head);
  std::string_view text =
      "GET http://api.test:8080/a?b=c HTTP/1.1\r\nX-Before: 1\r\nHost: elsewhere\r\n\r\n";
  EXPECT_FALSE(feed(parser, text));
  EXPECT_EQ(parser.target(), "/a?b=c");
  EXPECT_EQ(head.value_of(http::field::host), "api.test:8080");
  EXPECT_EQ(head.at(1).name, "Host");  // in its place
  EXPECT_EQ(head.size(), 2u);

  RequestParser old(head);  // HTTP/1.0 without a Host field gets one
  text = "GET http://api.test?q HTTP/1.0\r\n\r\n";
  EXPECT_FALSE(feed(old, text));
  EXPECT_EQ(old.target(), "/?q");
  EXPECT_EQ(head.value_of(http::field::host), "api.test");
}

TEST(MessageParser, SaysWhichStatusARefusedRequestGets) {
  HeadFields head;
  const auto refusal = [&](std::string_view text) {
    RequestParser parser(head);
    parser.header_limit(64);
    EXPECT_TRUE(feed(parser, text)) << text;
    return std::pair(parser.refusal(), parser.start_line_done());
  };
  EXPECT_EQ(refusal("GET / HTTP/1.1\r\n\r\n"), std::pair(http::status::bad_request, true));
  EXPECT_EQ(refusal("CONNECT a:443 HTTP/1.1\r\nHost: a:443\r\n\r\n"),
            std::pair(http::status::not_implemented, true));
  EXPECT_EQ(refusal("POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: gzip, chunked\r\n\r\n"),
            std::pair(http::status::not_implemented, true));
  EXPECT_EQ(refusal("GET /" + std::string(100, 'a')), std::pair(http::status::bad_request, false));
}

TEST(MessageParser, ReadsAResponseWhoseCodingsDoNotEndInChunkedUntilClose) {
  HeadFields head;
  ResponseParser parser(head);
  std::string_view text = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked, gzip\r\n\r\n";
  EXPECT_FALSE(feed(parser, text));
  EXPECT_FALSE(parser.chunked());
  EXPECT_TRUE(parser.need_eof());
  EXPECT_TRUE(parser.transfer_codings().others());
  for (const std::string_view bad :
       {"HTTP/1.0 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n",
        "HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n"
        "Content-Length: 1\r\n\r\n",
        "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked, chunked\r\n\r\n",
        "HTTP/1.1 099 Low\r\n\r\n", "HTTP/1.1 600 High\r\n\r\n"}) {
    EXPECT_TRUE(parse_head<false>(head, bad)) << bad;
  }
}

}  // namespace
}  // namespace sluice::http
