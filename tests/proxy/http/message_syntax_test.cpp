// The HTTP/1.1 grammar Beast's parser leaves to the proxy: Host values, Transfer-Encoding
// lists, chunk extensions and absolute-form targets.
#include "proxy/http/message_syntax.hpp"

#include <gtest/gtest.h>

#include <initializer_list>
#include <string>
#include <string_view>

namespace sluice::http::syntax {
namespace {

using namespace std::string_view_literals;

TEST(ValidHost, TakesNamesAddressesAndPortsAsRfc3986WritesThem) {
  for (const std::string_view host :
       {""sv, "a"sv, "api.example.test"sv, "api.example.test:8080"sv, "127.0.0.1"sv,
        "127.0.0.1:80"sv, "[::1]"sv, "[::1]:8080"sv, "[v1.fe80::a+en1]"sv, "xn--bcher-kva.test"sv,
        "a%2Db"sv, "a:"sv, "under_score~tilde!$&'()*+,;="sv}) {
    EXPECT_TRUE(valid_host(host)) << host;
  }
}

TEST(ValidHost, RefusesWhatNoUriHostHolds) {
  for (const std::string_view host :
       {"a b"sv, "a/b"sv, "user@a"sv, "a:80x"sv, "a:8:0"sv, "[::1"sv, "[]"sv, "[::1]x"sv,
        "[::1]:8x"sv, "a%2"sv, "a%zz"sv, "a\tb"sv, "a\"b"sv, "\xc3\xa9.test"sv, "a?b"sv, "a#b"sv,
        // IP literals that are no IPv6 address
        "[4712::abcd::]"sv, "[127.0.0.1]"sv, "[::g]"sv, "[1:2:3:4:5:6:7:8:9]"sv}) {
    EXPECT_FALSE(valid_host(host)) << host;
  }
}

TEST(TargetBytes, TakeVisibleAsciiButTheFragmentMark) {
  EXPECT_TRUE(valid_target_bytes("/a/b?c=d&e=%C3%A9;f=(g)!*'[]@:$,+~|{}^`\"<>\\"));
  EXPECT_TRUE(valid_target_bytes("*"));
  for (const std::string_view target :
       {"/caf\xc3\xa9"sv, "/\x80"sv, "/\xff"sv, "/a#b"sv, "#"sv, "/\x7f"sv, "/a b"sv, "/\t"sv}) {
    EXPECT_FALSE(valid_target_bytes(target)) << target;
  }
}

TEST(ChunkSizeLine, TakesASizeAndItsExtensions) {
  for (const std::string_view line :
       {"0"sv, "a"sv, "1F"sv, "5;name"sv, "5 ; name = value"sv, "5;a=\"quoted; \\\" text\";b"sv,
        "5;a;b=c;d=\"\""sv, "5\t;x"sv}) {
    EXPECT_TRUE(valid_chunk_size_line(line)) << line;
  }
}

TEST(ChunkSizeLine, RefusesWhatIsNone) {
  for (const std::string_view line :
       {""sv, "x"sv, ";a"sv, "5;"sv, "5;=b"sv, "5;a="sv, "5;a=\"open"sv, "5;a=\"x\"y"sv, "5 x"sv,
        "-5"sv, "5;a=\"\x01\""sv, "5\r"sv}) {
    EXPECT_FALSE(valid_chunk_size_line(line)) << line;
  }
}

TransferCodings codings_of(std::initializer_list<std::string_view> fields) {
  TransferCodings codings;
  for (const std::string_view field : fields) {
    codings.add(field);
  }
  return codings;
}

TEST(TransferCodings, ChunkedLastAndOnceFramesTheMessage) {
  for (const auto fields : {std::initializer_list<std::string_view>{"chunked"},
                            {"Chunked"},
                            {" chunked "},
                            {"gzip, chunked"},
                            {"gzip", "chunked"},
                            {", ,chunked,"},
                            {"gzip;level=9, chunked"},
                            {"x-custom ; a = \"quoted, with comma\" , chunked"}}) {
    const TransferCodings codings = codings_of(fields);
    EXPECT_TRUE(codings.framed_by_chunked()) << *fields.begin();
  }
  EXPECT_FALSE(codings_of({"chunked"}).others());
  EXPECT_TRUE(codings_of({"gzip", "chunked"}).others());
}

TEST(TransferCodings, SaysWhyOtherListsDoNotFrameTheMessage) {
  EXPECT_FALSE(TransferCodings{}.present);
  const TransferCodings gzip = codings_of({"gzip"});
  EXPECT_TRUE(gzip.present && gzip.valid);
  EXPECT_FALSE(gzip.ends_chunked);
  EXPECT_FALSE(codings_of({"chunked, gzip"}).ends_chunked);
  EXPECT_FALSE(codings_of({"chunked", "gzip"}).ends_chunked);
  EXPECT_EQ(codings_of({"chunked, chunked"}).chunked, 2u);
  EXPECT_EQ(codings_of({"chunked", "chunked"}).chunked, 2u);
  const TransferCodings empty = codings_of({""});
  EXPECT_TRUE(empty.present);
  EXPECT_EQ(empty.codings, 0u);
  EXPECT_FALSE(empty.framed_by_chunked());
  for (const std::string_view invalid :
       {"chunked;q=1"sv, "chunked x"sv, "gzip;"sv, "gzip;level"sv, "gzip;level="sv,
        "gzip;level=\"9"sv, "gzip;level=\"a\nb\""sv, "gzip;level=\"a\x01\""sv, "\"chunked\""sv,
        "chunked\r"sv, "chunked/1"sv, "@"sv}) {
    const TransferCodings codings = codings_of({invalid});
    EXPECT_FALSE(codings.valid) << invalid;
    EXPECT_FALSE(codings.framed_by_chunked()) << invalid;
  }
}

TEST(ChunkExtensions, RefuseControlCharactersOtherThanTab) {
  EXPECT_TRUE(valid_chunk_extensions(""));
  EXPECT_TRUE(valid_chunk_extensions(";name=\"quoted\tvalue\";other"));
  EXPECT_TRUE(valid_chunk_extensions(";n=\"\xc3\xa9\""));  // obs-text
  for (const std::string_view bad :
       {";n=\"a\nb\""sv, ";n=\"a\rb\""sv, ";n=\"a\0b\""sv, ";n=\"a\x7f\""sv, ";n=\"\x1b\""sv}) {
    EXPECT_FALSE(valid_chunk_extensions(bad)) << bad;
  }
}

TEST(AbsoluteForm, SplitsAnHttpUriIntoItsAuthorityAndItsPathAndQuery) {
  const AbsoluteForm form = split_absolute_form("http://api.test:8080/a/b?c=d");
  EXPECT_TRUE(form.valid);
  EXPECT_EQ(form.authority, "api.test:8080");
  EXPECT_EQ(form.path, "/a/b?c=d");
  const AbsoluteForm bare = split_absolute_form("HTTPS://api.test");
  EXPECT_TRUE(bare.valid);
  EXPECT_EQ(bare.authority, "api.test");
  EXPECT_EQ(bare.path, "");
  const AbsoluteForm query = split_absolute_form("http://[::1]?x");
  EXPECT_TRUE(query.valid);
  EXPECT_EQ(query.authority, "[::1]");
  EXPECT_EQ(query.path, "?x");
}

TEST(AbsoluteForm, RefusesOtherSchemesUserinfoEmptyHostsAndFragments) {
  for (const std::string_view target :
       {"ftp://api.test/"sv, "http:/api.test/"sv, "http:api.test"sv, "api.test:80"sv, "*"sv,
        "http://"sv, "http:///x"sv, "http://:80/x"sv, "http://user@api.test/"sv,
        "http://user:secret@api.test/"sv, "http://api.test/x#part"sv, "http://api.test#part"sv,
        "http://a b/"sv, "urn:isbn:0451450523"sv}) {
    EXPECT_FALSE(split_absolute_form(target).valid) << target;
  }
}

}  // namespace
}  // namespace sluice::http::syntax
