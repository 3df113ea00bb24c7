// RESP on its own: commands written as arrays of bulk strings, and replies parsed from bytes as
// they arrive (whole, split anywhere, several at once, or not RESP at all).
#include "proxy/store/redis/resp.hpp"

#include <gtest/gtest.h>

#include <array>
#include <stdexcept>
#include <string>
#include <string_view>

namespace sluice::store::redis {
namespace {

using Kind = RespValue::Kind;

/// The one reply in `bytes`, fed at once; fails the test if there is not exactly one.
RespValue parse(std::string_view bytes) {
  RespReader reader;
  reader.feed(bytes);
  const RespValue* reply = reader.next();
  EXPECT_NE(reply, nullptr) << bytes;
  const RespValue copy = reply != nullptr ? *reply : RespValue{};
  EXPECT_EQ(reader.next(), nullptr) << bytes;
  return copy;
}

TEST(AppendCommand, WritesAnArrayOfBulkStrings) {
  std::string out = "kept";
  const std::array<std::string_view, 3> set{"SET", "key", "a\r\nb"};
  append_command(out, set);
  EXPECT_EQ(out, "kept*3\r\n$3\r\nSET\r\n$3\r\nkey\r\n$4\r\na\r\nb\r\n");
  out.clear();
  const std::array<std::string_view, 2> empty{"GET", ""};
  append_command(out, empty);
  EXPECT_EQ(out, "*2\r\n$3\r\nGET\r\n$0\r\n\r\n");
}

TEST(RespReader, ReadsEveryKindOfReply) {
  const RespValue status = parse("+OK\r\n");
  EXPECT_EQ(status.kind, Kind::status);
  EXPECT_EQ(status.text, "OK");
  EXPECT_FALSE(status.is_error());

  const RespValue error = parse("-NOSCRIPT No matching script\r\n");
  EXPECT_EQ(error.kind, Kind::error);
  EXPECT_EQ(error.text, "NOSCRIPT No matching script");
  EXPECT_TRUE(error.is_error());

  EXPECT_EQ(parse(":42\r\n").integer, 42);
  EXPECT_EQ(parse(":-7\r\n").kind, Kind::integer);
  EXPECT_EQ(parse(":-7\r\n").integer, -7);

  const RespValue bulk = parse("$6\r\nab\r\ncd\r\n");  // a bulk string may hold CRLF
  EXPECT_EQ(bulk.kind, Kind::bulk);
  EXPECT_EQ(bulk.text, "ab\r\ncd");
  EXPECT_EQ(parse("$0\r\n\r\n").kind, Kind::bulk);
  EXPECT_EQ(parse("$0\r\n\r\n").text, "");
  EXPECT_EQ(parse("$-1\r\n").kind, Kind::nil);
  EXPECT_EQ(parse("*-1\r\n").kind, Kind::nil);
}

TEST(RespReader, ReadsNestedArrays) {
  const RespValue array = parse("*4\r\n:1\r\n$3\r\ntwo\r\n*2\r\n:3\r\n$-1\r\n*0\r\n");
  ASSERT_EQ(array.kind, Kind::array);
  ASSERT_EQ(array.elements.size(), 4U);
  EXPECT_EQ(array.elements[0].integer, 1);
  EXPECT_EQ(array.elements[1].text, "two");
  ASSERT_EQ(array.elements[2].kind, Kind::array);
  ASSERT_EQ(array.elements[2].elements.size(), 2U);
  EXPECT_EQ(array.elements[2].elements[0].integer, 3);
  EXPECT_EQ(array.elements[2].elements[1].kind, Kind::nil);
  EXPECT_EQ(array.elements[3].kind, Kind::array);
  EXPECT_TRUE(array.elements[3].elements.empty());
}

TEST(RespReader, RefusesAnArrayTooLongBeforeAllocatingIt) {
  // hiredis would allocate the element table (4 GB here) on reading the length alone.
  RespReader reader;
  reader.feed("*500000000\r\n");
  try {
    reader.next();
    ADD_FAILURE() << "an array of 500000000 elements was accepted";
  } catch (const std::runtime_error& error) {
    EXPECT_STREQ(error.what(), "not a Redis reply: an array of 500000000 elements (at most 65536)");
  }
  // Nested arrays are held to the same length; up to it they are read as before.
  std::string longest = "*2\r\n*65536\r\n";
  for (int i = 0; i < 65536; ++i) {
    longest += ":7\r\n";
  }
  longest += "*65537\r\n";
  RespReader nested;
  nested.feed(longest);
  EXPECT_THROW(nested.next(), std::runtime_error);
  longest.resize(longest.size() - std::string_view("*65537\r\n").size());
  longest += "*0\r\n";
  const RespValue array = parse(longest);
  ASSERT_EQ(array.elements.size(), 2U);
  EXPECT_EQ(array.elements[0].elements.size(), 65536U);
}

TEST(RespReader, WaitsForTheLastByteOfAReplySplitAnywhere) {
  const std::string_view bytes = "*2\r\n$5\r\nhello\r\n:12\r\n";
  RespReader reader;
  for (std::size_t i = 0; i + 1 < bytes.size(); ++i) {
    reader.feed(bytes.substr(i, 1));
    ASSERT_EQ(reader.next(), nullptr) << "after " << i + 1 << " bytes";
  }
  reader.feed(bytes.substr(bytes.size() - 1));
  const RespValue* reply = reader.next();
  ASSERT_NE(reply, nullptr);
  ASSERT_EQ(reply->elements.size(), 2U);
  EXPECT_EQ(reply->elements[0].text, "hello");
  EXPECT_EQ(reply->elements[1].integer, 12);
}

TEST(RespReader, ReadsSeveralRepliesFromOneReadInOrder) {
  RespReader reader;
  reader.feed("+OK\r\n:1\r\n$1\r\nx\r\n:2");
  EXPECT_EQ(reader.next()->text, "OK");
  EXPECT_EQ(reader.next()->integer, 1);
  EXPECT_EQ(reader.next()->text, "x");
  EXPECT_EQ(reader.next(), nullptr);  // ":2" is not whole yet
  reader.feed("\r\n");
  EXPECT_EQ(reader.next()->integer, 2);
  EXPECT_EQ(reader.next(), nullptr);
}

TEST(RespReader, ReusesOneValueForEveryReplyWithNothingLeftOver) {
  // Each reply is built in the place of the one before: what a longer or other-kind reply left
  // there must not show through.
  RespReader reader;
  reader.feed("*3\r\n$5\r\nhello\r\n*1\r\n:9\r\n:3\r\n*2\r\n:1\r\n$-1\r\n-ERR no\r\n");
  const RespValue* first = reader.next();
  ASSERT_NE(first, nullptr);
  EXPECT_EQ(first->elements.size(), 3U);
  const RespValue* second = reader.next();
  ASSERT_NE(second, nullptr);
  EXPECT_EQ(second, first);  // the same place, reused
  ASSERT_EQ(second->kind, Kind::array);
  ASSERT_EQ(second->elements.size(), 2U);
  EXPECT_EQ(second->elements[0].kind, Kind::integer);
  EXPECT_EQ(second->elements[0].integer, 1);
  EXPECT_TRUE(second->elements[0].text.empty());
  EXPECT_TRUE(second->elements[0].elements.empty());
  EXPECT_EQ(second->elements[1].kind, Kind::nil);
  EXPECT_TRUE(second->elements[1].elements.empty());
  const RespValue* third = reader.next();
  ASSERT_NE(third, nullptr);
  EXPECT_EQ(third->kind, Kind::error);
  EXPECT_EQ(third->text, "ERR no");
  EXPECT_TRUE(third->elements.empty());
  EXPECT_EQ(third->integer, 0);
}

TEST(RespReader, KeepsAPartReadAcrossAMove) {
  RespReader first;
  first.feed("$5\r\nhel");
  RespReader second(std::move(first));
  second.feed("lo\r\n");
  EXPECT_EQ(second.next()->text, "hello");
}

TEST(RespReader, RefusesBytesThatAreNotRespAtAll) {
  RespReader reader;
  reader.feed("HTTP/1.1 400 Bad Request\r\n");
  try {
    reader.next();
    FAIL() << "expected a protocol error";
  } catch (const std::runtime_error& error) {
    EXPECT_EQ(std::string_view(error.what()).substr(0, 19), "not a Redis reply: ");
  }
}

}  // namespace
}  // namespace sluice::store::redis
