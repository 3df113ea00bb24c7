// HTTP/1.1 response heads as HTTP/2 fields, a request's head as an HTTP/2 upstream gets it,
// and grpc-message's encoding: exact outputs.
#include "proxy/http/h2/translate.hpp"

#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

namespace sluice::http::h2 {
namespace {

/// The fields for nghttp2, as (name, value) pairs.
std::vector<std::pair<std::string, std::string>> pairs_of(FieldList& fields) {
  std::vector<std::pair<std::string, std::string>> out;
  for (const nghttp2_nv& field : fields.list()) {
    out.emplace_back(std::string(reinterpret_cast<const char*>(field.name), field.namelen),
                     std::string(reinterpret_cast<const char*>(field.value), field.valuelen));
  }
  return out;
}

using Pairs = std::vector<std::pair<std::string, std::string>>;

TEST(FieldList, ReadsTheStatusAndLowerCasesNames) {
  FieldList fields;
  fields.read(
      "HTTP/1.1 429 Too Many Requests\r\n"
      "Content-Type: application/problem+json\r\n"
      "Retry-After: 7\r\n"
      "RateLimit-Policy: \"per-ip\";q=2;w=3600\r\n"
      "Content-Length: 120\r\n"
      "\r\n");
  EXPECT_EQ(fields.status(), 429U);
  EXPECT_EQ(pairs_of(fields), (Pairs{{":status", "429"},
                                     {"content-type", "application/problem+json"},
                                     {"retry-after", "7"},
                                     {"ratelimit-policy", "\"per-ip\";q=2;w=3600"},
                                     {"content-length", "120"}}));
}

TEST(FieldList, DropsConnectionSpecificFields) {
  FieldList fields;
  fields.read(
      "HTTP/1.1 200 OK\r\n"
      "Connection: keep-alive\r\n"
      "Keep-Alive: timeout=5\r\n"
      "Proxy-Connection: close\r\n"
      "Transfer-Encoding: chunked\r\n"
      "Upgrade: h2c\r\n"
      "X-Upgrade-Ok: yes\r\n"
      "\r\n");
  EXPECT_EQ(pairs_of(fields), (Pairs{{":status", "200"}, {"x-upgrade-ok", "yes"}}));
}

TEST(FieldList, LeavesOutTheFieldsToSkipAndTrimsLeadingSpace) {
  FieldList fields;
  fields.read(
      "HTTP/1.1 403 Forbidden\r\n"
      "Content-Type: application/problem+json\r\n"
      "Content-Length: 99\r\n"
      "X-Spaced:  \t two\r\n"
      "\r\n",
      {"content-type", "content-length"});
  EXPECT_EQ(pairs_of(fields), (Pairs{{":status", "403"}, {"x-spaced", "two"}}));
}

TEST(FieldList, AddsFieldsAndReplacesTheStatus) {
  FieldList fields;
  fields.read("HTTP/1.1 429 Too Many Requests\r\nRetry-After: 1\r\n\r\n");
  fields.set_status(200);
  fields.add("content-type", "application/grpc");
  fields.add("grpc-status", "8");
  EXPECT_EQ(fields.status(), 200U);
  EXPECT_EQ(pairs_of(fields), (Pairs{{":status", "200"},
                                     {"retry-after", "1"},
                                     {"content-type", "application/grpc"},
                                     {"grpc-status", "8"}}));
}

TEST(FieldList, StartsAfreshOnEachRead) {
  FieldList fields;
  fields.read("HTTP/1.1 502 Bad Gateway\r\nX-First: 1\r\n\r\n");
  fields.add("x-added", "2");
  fields.read("HTTP/1.1 204 No Content\r\nX-Second: 3\r\n\r\n");
  EXPECT_EQ(pairs_of(fields), (Pairs{{":status", "204"}, {"x-second", "3"}}));
}

TEST(FieldList, KeepsEveryFieldWhenTheTextOutgrowsItsStorage) {
  // Names and values are kept as offsets: a long head that moves the text must not break them.
  std::string head = "HTTP/1.1 200 OK\r\n";
  Pairs expected{{":status", "200"}};
  for (int i = 0; i < 100; ++i) {
    const std::string value(50, static_cast<char>('a' + i % 26));
    head += "X-Field-" + std::to_string(i) + ": " + value + "\r\n";
    expected.emplace_back("x-field-" + std::to_string(i), value);
  }
  head += "\r\n";
  FieldList fields;
  fields.read(head);
  EXPECT_EQ(pairs_of(fields), expected);
}

TEST(FieldListOut, PutsARequestsPseudoHeaderFieldsFirstAndLeavesOutHostAndFraming) {
  FieldList fields;
  FieldListOut out(fields, "https");
  out.request("POST", "/test.Echo/Unary?x=1", "api.example:8080");
  out.field("content-type", "application/grpc");
  out.field("Host", "api.example:8080");
  out.field("Transfer-Encoding", "chunked");
  out.field("X-Forwarded-For", "10.0.0.1");
  out.end();
  EXPECT_EQ(fields.status(), 0U) << "a request has no :status";
  EXPECT_EQ(pairs_of(fields), (Pairs{{":method", "POST"},
                                     {":scheme", "https"},
                                     {":authority", "api.example:8080"},
                                     {":path", "/test.Echo/Unary?x=1"},
                                     {"content-type", "application/grpc"},
                                     {"x-forwarded-for", "10.0.0.1"}}));
}

TEST(FieldListOut, PutsAResponsesStatusFirstAndTakesTheProxysOwnLines) {
  FieldList fields;
  fields.add("x-left-over", "1");  // from the last message: a response starts afresh
  FieldListOut out(fields);
  out.response(11, 200, "OK");
  out.field("Content-Type", "text/plain");
  out.field("Connection", "keep-alive");
  out.lines("RateLimit: \"api\";r=4;t=60\r\nContent-Length: 5\r\nConnection: keep-alive\r\n");
  out.end();
  EXPECT_EQ(pairs_of(fields), (Pairs{{":status", "200"},
                                     {"content-type", "text/plain"},
                                     {"ratelimit", "\"api\";r=4;t=60"},
                                     {"content-length", "5"}}));
}

TEST(FieldList, AddsFieldLinesAndLeavesOutTheOnesItIsTold) {
  FieldList fields;
  fields.read("HTTP/1.1 200 OK\r\nRateLimit: \"old\"\r\nX-Kept: 1\r\n\r\n");
  fields.erase_if([](std::string_view name) { return name == "ratelimit"; });
  fields.add_lines("RateLimit: \"per-ip\";r=1;t=5\r\nX-RateLimit-Remaining: 1\r\n");
  EXPECT_EQ(pairs_of(fields), (Pairs{{":status", "200"},
                                     {"x-kept", "1"},
                                     {"ratelimit", "\"per-ip\";r=1;t=5"},
                                     {"x-ratelimit-remaining", "1"}}));
  fields.clear();
  fields.add("grpc-status", "0");
  EXPECT_EQ(pairs_of(fields), (Pairs{{"grpc-status", "0"}})) << "trailers: no :status";
}

TEST(GrpcMessage, PercentEncodesWhatIsNotPrintableAsciiAndThePercentSign) {
  EXPECT_EQ(grpc_message("Too Many Requests"), "Too Many Requests");
  EXPECT_EQ(grpc_message("100% done"), "100%25 done");
  EXPECT_EQ(grpc_message("line\nbreak\ttab"), "line%0Abreak%09tab");
  EXPECT_EQ(grpc_message("caf\xC3\xA9"), "caf%C3%A9");
  EXPECT_EQ(grpc_message(std::string_view("\x00\x7F~", 3)), "%00%7F~");
  EXPECT_EQ(grpc_message(""), "");
}

}  // namespace
}  // namespace sluice::http::h2
