// Message heads written as text: request and status lines, fields, the Connection field each
// HTTP version needs, and heads larger than the inline storage.
#include "proxy/http/header_text.hpp"

#include <gtest/gtest.h>

#include <string>
#include <string_view>

namespace sluice::http {
namespace {

std::string text_of(const HeadText& head) { return {head.data(), head.size()}; }

TEST(HeaderText, WritesARequestHeadForTheUpstreamInHttp11) {
  HeadText head;
  write_request_line(head, "POST", "/api/items?page=2");
  write_field(head, "Host", "api.test");
  write_field(head, "Content-Length", std::uint64_t{18446744073709551615U});
  write_field(head, "X-Empty", "");
  end_head(head);
  EXPECT_EQ(text_of(head),
            "POST /api/items?page=2 HTTP/1.1\r\n"
            "Host: api.test\r\n"
            "Content-Length: 18446744073709551615\r\n"
            "X-Empty: \r\n"
            "\r\n");
}

TEST(HeaderText, WritesTheStatusLineInTheClientsVersion) {
  HeadText head;
  write_status_line(head, 11, 429, "Too Many Requests");
  write_status_line(head, 10, 200, "OK");
  EXPECT_EQ(text_of(head), "HTTP/1.1 429 Too Many Requests\r\nHTTP/1.0 200 OK\r\n");
}

TEST(HeaderText, SaysConnectionOnlyWhereTheVersionsDefaultIsNotMeant) {
  const auto persistence = [](unsigned version, bool keep_alive) {
    HeadText head;
    write_persistence(head, version, keep_alive);
    return text_of(head);
  };
  EXPECT_EQ(persistence(11, true), "");
  EXPECT_EQ(persistence(11, false), "Connection: close\r\n");
  EXPECT_EQ(persistence(10, true), "Connection: keep-alive\r\n");
  EXPECT_EQ(persistence(10, false), "");
}

TEST(HeaderText, AppendsToAnyBufferAndGrowsPastTheInlineStorage) {
  fmt::memory_buffer body;
  append(body, "n=");
  append_number(body, 0);
  append(body, ",");
  append_number(body, 4096);
  EXPECT_EQ(std::string(body.data(), body.size()), "n=0,4096");

  HeadText head;
  const std::string value(3000, 'v');  // three times the inline storage
  write_field(head, "X-Long", value);
  write_field(head, "X-After", "1");
  EXPECT_EQ(text_of(head), "X-Long: " + value + "\r\nX-After: 1\r\n");
}

}  // namespace
}  // namespace sluice::http
