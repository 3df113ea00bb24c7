#pragma once

#include <algorithm>
#include <boost/beast/http/basic_parser.hpp>
#include <boost/beast/http/error.hpp>
#include <boost/beast/http/status.hpp>
#include <boost/beast/http/verb.hpp>
#include <cstdint>
#include <cstring>
#include <span>
#include <string_view>

#include "proxy/http/head_fields.hpp"
#include "proxy/http/header_text.hpp"
#include "proxy/http/message_syntax.hpp"

namespace sluice::http {

/// Largest request or response header accepted (431 beyond it).
inline constexpr std::uint32_t kMaxHeaderBytes = 16 * 1024;

/// Beast's HTTP/1 parser (its syntax checks, framing and limits unchanged), keeping the head in
/// a connection's HeadFields instead of a Beast message, and copying body bytes into the room
/// the relay lends it, as Beast's buffer_body does: when the room is full, parsing stops with
/// http::error::need_buffer. One parser per message; the HeadFields outlive it.
///
/// It adds the checks of RFC 9112 that Beast leaves out, on the fields as they are parsed, and
/// fails the message with an error as Beast's own checks do (docs/http-conformance.md):
/// - a request: a request-target with bytes outside visible ASCII, or a fragment; line folding
///   (obs-fold), a Host field missing in HTTP/1.1, repeated, or not a valid host; CONNECT
///   (refusal() is 501, or 400 when its target is not in authority-form); a request-target in
///   asterisk-form other than for OPTIONS, or in an absolute-form that is not an http(s) URI. A
///   valid absolute-form is kept as its path and query, its authority in place of the Host field;
/// - a request's Transfer-Encoding: in HTTP/1.0, with Content-Length, not a valid list, with
///   `chunked` more than once or not last, or with codings besides `chunked` (refusal(): 501);
/// - a response's Transfer-Encoding: in HTTP/1.0, with Content-Length, not a valid list, or with
///   `chunked` more than once (without `chunked` last, the body runs until the connection
///   closes); a status outside 100-599;
/// - chunk extensions holding control characters.
///
/// framing_broken() tells a reader that the bytes Beast is waiting behind already prove a
/// chunked body malformed (Beast asks for more bytes there), so that it answers at once.
template <bool isRequest>
class MessageParser final : public boost::beast::http::basic_parser<isRequest> {
 public:
  using error_code = boost::beast::error_code;
  using string_view = boost::beast::string_view;

  explicit MessageParser(HeadFields& head) : head_(head) {}

  const HeadFields& head() const noexcept { return head_; }
  unsigned version() const noexcept { return version_; }

  // Requests.
  boost::beast::http::verb method() const noexcept { return method_; }
  std::string_view method_string() const noexcept { return head_.view(method_string_); }
  std::string_view target() const noexcept { return head_.view(target_); }

  // Responses.
  unsigned status() const noexcept { return status_; }
  boost::beast::http::status result() const noexcept {
    return boost::beast::http::int_to_status(status_);
  }
  std::string_view reason() const noexcept { return head_.view(reason_); }

  /// The start line was read whole: a head too large before that is a request-target too long.
  bool start_line_done() const noexcept { return start_line_done_; }
  /// The status a request that failed the checks above is answered with.
  boost::beast::http::status refusal() const noexcept { return refusal_; }
  /// The message's Transfer-Encoding fields, all of them.
  const syntax::TransferCodings& transfer_codings() const noexcept { return codings_; }

  /// Whether the bytes not parsed yet, which Beast left because it needs more, already prove
  /// the chunked framing wrong: a chunk's data not followed by CRLF (Beast wants 4 bytes
  /// before it looks at the 2 it needs), or a chunk-size line that has ended and is not one
  /// (an unclosed quote in an extension makes Beast read on past the line's end) (RFC 9112
  /// §7.1).
  bool framing_broken(std::string_view unparsed) const noexcept {
    if (!chunk_line_next_) {
      return false;
    }
    if (crlf_before_line_) {
      if ((!unparsed.empty() && unparsed[0] != '\r') ||
          (unparsed.size() > 1 && unparsed[1] != '\n')) {
        return true;
      }
      unparsed.remove_prefix(std::min<std::size_t>(2, unparsed.size()));
    }
    const std::size_t end = unparsed.find('\n');
    if (end == std::string_view::npos) {
      return false;  // the line goes on
    }
    return end == 0 || unparsed[end - 1] != '\r' ||
           !syntax::valid_chunk_size_line(unparsed.substr(0, end - 1));
  }

  /// Where the next body bytes go.
  void body_into(std::span<char> room) noexcept { room_ = room; }
  /// The part of the room not yet filled.
  std::size_t room_left() const noexcept { return room_.size(); }

 private:
  using field = boost::beast::http::field;
  using http_error = boost::beast::http::error;
  using http_status = boost::beast::http::status;

  void on_request_impl(boost::beast::http::verb method, string_view method_string,
                       string_view target, int version, error_code& ec) override {
    head_.clear();
    method_ = method;
    method_string_ = head_.keep(method_string);
    version_ = static_cast<unsigned>(version);
    start_line_done_ = true;
    if (!syntax::valid_target_bytes(target)) {
      ec = http_error::bad_target;
      return;
    }
    if (method_ == boost::beast::http::verb::connect) {
      // A tunnel: not what a gateway opens (501); and CONNECT takes the authority-form only
      // (RFC 9112 §3.2.3), so another form is malformed (400).
      const bool authority_form = target.front() != '/' && target.find("://") == string_view::npos;
      refusal_ = authority_form ? http_status::not_implemented : http_status::bad_request;
      ec = http_error::bad_method;
      return;
    }
    if (target.front() == '/') {  // origin-form: the usual one
      target_ = head_.keep(target);
      return;
    }
    keep_other_target(target, ec);
  }

  /// The request-target forms other than origin-form (RFC 9112 §3.2).
  void keep_other_target(string_view target, error_code& ec) {
    if (target == "*") {  // asterisk-form: the server itself, for OPTIONS only
      if (method_ == boost::beast::http::verb::options) {
        target_ = head_.keep(target);
      } else {
        ec = http_error::bad_target;
      }
      return;
    }
    const syntax::AbsoluteForm form = syntax::split_absolute_form(target);
    if (!form.valid) {
      ec = http_error::bad_target;
      return;
    }
    // Routed and forwarded in origin-form; the authority replaces the Host field (§3.2.2).
    authority_ = head_.keep(form.authority);
    const HeadFields::Span slash = head_.keep(form.path.starts_with('/') ? "" : "/");
    const HeadFields::Span rest = head_.keep(form.path);
    target_ = {slash.offset, slash.length + rest.length};
  }

  void on_response_impl(int status, string_view reason, int version, error_code& ec) override {
    head_.clear();
    status_ = static_cast<unsigned>(status);
    reason_ = head_.keep(reason);
    version_ = static_cast<unsigned>(version);
    start_line_done_ = true;
    if (status < 100 || status > 599) {
      ec = http_error::bad_status;  // invalid (RFC 9110 §15)
    }
  }

  void on_field_impl(field id, string_view name, string_view value, error_code& ec) override {
    if constexpr (isRequest) {
      if (unfolded(name, value)) {
        ec = http_error::bad_value;  // obs-fold in a request (RFC 9112 §5.2)
        return;
      }
    }
    if (this->is_header_done()) {  // a trailer field: dropped
      return;
    }
    if (id == field::transfer_encoding) {
      codings_.add(value);
    } else if (id == field::content_length) {
      content_length_ = true;  // (Beast has checked its value)
    }
    if constexpr (isRequest) {
      if (id == field::host) {
        ++host_fields_;
        if (!syntax::valid_host(value)) {
          ec = http_error::bad_value;
          return;
        }
        if (authority_.length > 0) {
          head_.add(id, name, authority_);
          return;
        }
      }
    }
    head_.add(id, name, value);
  }

  /// Whether Beast joined the lines of a folded field value: it hands over a value from the
  /// input, where it follows the name, the colon and optional whitespace, unless it had to
  /// join lines, into a buffer of its own. (Reads only bytes Beast has parsed.)
  static bool unfolded(string_view name, string_view value) noexcept {
    const char* after = name.data() + name.size() + 1;  // past the colon
    while (*after == ' ' || *after == '\t') {
      ++after;
    }
    return after != value.data();
  }

  void on_header_impl(error_code& ec) override {
    check_head(ec);
    if (ec) {
      return;
    }
    if constexpr (isRequest) {
      if (host_fields_ == 0 && authority_.length > 0) {  // HTTP/1.0 in absolute-form
        head_.add(field::host, "Host", authority_);
      }
    }
    chunk_line_next_ = codings_.framed_by_chunked();
    head_.seal();
  }

  /// The checks that need the whole head.
  void check_head(error_code& ec) {
    if constexpr (isRequest) {
      // Exactly one Host field in HTTP/1.1, at most one in HTTP/1.0 (RFC 9112 §3.2).
      if (host_fields_ > 1 || (host_fields_ == 0 && version_ >= kHttp11)) {
        ec = http_error::bad_value;
        return;
      }
    }
    if (!codings_.present) {
      return;
    }
    // Transfer-Encoding in HTTP/1.0 is faulty framing (RFC 9112 §6.1); with Content-Length it
    // may be smuggling (§6.3, rule 3; a proxy must not forward both); chunked twice is
    // forbidden (§7).
    if (version_ < kHttp11 || content_length_ || !codings_.valid || codings_.chunked > 1) {
      ec = http_error::bad_transfer_encoding;
      return;
    }
    if constexpr (isRequest) {
      // Without chunked last, a request's length cannot be known (§6.3, rule 4). A response's
      // body runs until the connection closes.
      if (!codings_.ends_chunked) {
        ec = http_error::bad_transfer_encoding;
      } else if (codings_.others()) {
        refusal_ = http_status::not_implemented;  // a coding the proxy does not know (§6.1)
        ec = http_error::bad_transfer_encoding;
      }
    }
  }

  void on_body_init_impl(const boost::optional<std::uint64_t>&, error_code&) override {}

  std::size_t on_body_impl(string_view body, error_code& ec) override { return take(body, ec); }

  void on_chunk_header_impl(std::uint64_t, string_view extensions, error_code& ec) override {
    chunk_line_next_ = false;
    if (!syntax::valid_chunk_extensions(extensions)) {
      ec = http_error::bad_chunk_extension;
    }
  }

  std::size_t on_chunk_body_impl(std::uint64_t remain, string_view body, error_code& ec) override {
    const std::size_t taken = take(body, ec);
    if (taken == remain) {  // the chunk's data is over: CRLF, then the next size line
      chunk_line_next_ = true;
      crlf_before_line_ = true;
    }
    return taken;
  }

  void on_finish_impl(error_code&) override {}

  /// Copies what fits of `body` into the room; need_buffer when some of it did not fit.
  std::size_t take(string_view body, error_code& ec) {
    const std::size_t taken = std::min(body.size(), room_.size());
    if (taken > 0) {
      std::memcpy(room_.data(), body.data(), taken);
      room_ = room_.subspan(taken);
    }
    if (taken < body.size()) {
      ec = boost::beast::http::error::need_buffer;
    }
    return taken;
  }

  HeadFields& head_;
  std::span<char> room_;
  unsigned version_ = 11;
  boost::beast::http::verb method_ = boost::beast::http::verb::unknown;
  HeadFields::Span method_string_;
  HeadFields::Span target_;
  HeadFields::Span authority_;  ///< An absolute-form target's.
  unsigned host_fields_ = 0;
  unsigned status_ = 0;
  HeadFields::Span reason_;
  syntax::TransferCodings codings_;
  bool content_length_ = false;  ///< A Content-Length field.
  bool start_line_done_ = false;
  bool chunk_line_next_ = false;   ///< A chunked body's next bytes are a chunk-size line,
  bool crlf_before_line_ = false;  ///< after the CRLF that ends a chunk's data.
  http_status refusal_ = http_status::bad_request;
};

using RequestParser = MessageParser<true>;
using ResponseParser = MessageParser<false>;

}  // namespace sluice::http
