#pragma once

#include <nghttp2/nghttp2.h>

#include <array>
#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>
#include <vector>

#include "proxy/http/h2/session.hpp"
#include "proxy/http/header_text.hpp"

namespace sluice::http::h2 {

/// The request of `stream` as the HTTP/1.1 head the rest of the proxy reads (the pipeline, the
/// relay, the access log): its request line from :method and :path, Host from :authority, its
/// fields, the cookie crumbs joined, and its framing: its Content-Length, none when the header
/// block ended the stream, else chunked. nghttp2 has already refused what HTTP/2 forbids
/// (connection-specific fields, CR or LF in a value, missing pseudo-header fields).
void write_request_head(const Stream& stream, HeadText& head);

/// The header fields of an HTTP/2 response, made from an HTTP/1.1 response head (as the
/// proxy's own answers and the relay write them): `:status` first, names in lower case, and
/// without the fields that belong to one HTTP/1.1 connection (RFC 9113 §8.2.2). Its storage is
/// kept from one response to the next.
class ResponseFields {
 public:
  /// Reads `head` (a status line, field lines, a blank line); `skip` names fields (in lower
  /// case) to leave out besides the connection-specific ones.
  void read(std::string_view head, std::initializer_list<std::string_view> skip = {});
  /// Adds a field; `name` in lower case.
  void add(std::string_view name, std::string_view value);
  /// Replaces :status.
  void set_status(unsigned status);
  unsigned status() const noexcept { return status_; }
  /// The fields for nghttp2 (valid until the next change).
  const std::vector<nghttp2_nv>& list();

 private:
  struct Field {
    std::size_t name, name_length, value, value_length;
  };
  std::string text_;
  std::vector<Field> fields_;
  std::vector<nghttp2_nv> list_;
  unsigned status_ = 0;
  std::array<char, 3> status_text_{};
};

/// grpc-message's value: percent-encoded as gRPC's HTTP/2 protocol asks (bytes outside
/// printable ASCII, and `%`).
std::string grpc_message(std::string_view text);

}  // namespace sluice::http::h2
