#include "proxy/http/h2/request_head.hpp"

#include <charconv>
#include <cstdint>
#include <optional>

#include "proxy/http/message_syntax.hpp"
#include "proxy/pipeline/http_text.hpp"

namespace sluice::http::h2 {
namespace {

/// A Content-Length value nghttp2 has checked (digits only, one field); nullopt if absent.
std::optional<std::uint64_t> content_length_of(const HeadFields& fields) noexcept {
  const std::string_view text = fields.value_of(http::field::content_length);
  std::uint64_t length = 0;
  if (text.empty() || std::from_chars(text.data(), text.data() + text.size(), length).ptr !=
                          text.data() + text.size()) {
    return std::nullopt;
  }
  return length;
}

}  // namespace

http::status read_request_head(const RequestStream& stream, HeadFields& fields, RequestHead& head) {
  fields.clear();
  const http::verb method = http::string_to_verb(stream.method);
  if (method == http::verb::connect) {
    return http::status::not_implemented;  // a tunnel: not what a gateway opens
  }
  const std::string_view target = stream.path;
  const bool asterisk = target == "*";
  if ((asterisk && method != http::verb::options) || (!asterisk && !target.starts_with('/')) ||
      !syntax::valid_target_bytes(target)) {
    return http::status::bad_request;
  }
  const HeadFields::Span method_text = fields.keep(stream.method);
  const HeadFields::Span target_text = fields.keep(target);
  const bool authority = !stream.authority.empty();
  if (authority) {
    if (!syntax::valid_host(stream.authority)) {
      return http::status::bad_request;
    }
    fields.add(http::field::host, "host", stream.authority);
  }
  unsigned host_fields = 0;
  for (const RequestStream::ReceivedField& received : stream.fields) {
    const std::string_view name = stream.name_of(received);
    const std::string_view value = pipeline::trim_whitespace(stream.value_of(received));
    if (!syntax::valid_field_value(value)) {
      return http::status::bad_request;
    }
    const http::field id = http::string_to_field(name);
    if (id == http::field::host) {
      if (authority) {
        continue;  // :authority wins
      }
      ++host_fields;
      if (!syntax::valid_host(value)) {
        return http::status::bad_request;
      }
    }
    fields.add(id, name, value);
  }
  // Without :authority, exactly one Host field, as HTTP/1.1 wants (RFC 9112 §3.2).
  if (!authority && host_fields != 1) {
    return http::status::bad_request;
  }
  if (!stream.cookie.empty()) {
    fields.add(http::field::cookie, "cookie", stream.cookie);
  }
  fields.seal();
  const std::optional<std::uint64_t> length = content_length_of(fields);
  if (!length && !fields.value_of(http::field::content_length).empty()) {
    return http::status::bad_request;
  }
  head = RequestHead{.fields = &fields,
                     .method = method,
                     .method_string = fields.view(method_text),
                     .target = fields.view(target_text),
                     .version = kHttp11,
                     .content_length = length,
                     .chunked = !stream.body_done && !length};
  return http::status::ok;
}

}  // namespace sluice::http::h2
