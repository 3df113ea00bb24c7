#pragma once

#include <algorithm>
#include <boost/beast/http/basic_parser.hpp>
#include <boost/beast/http/error.hpp>
#include <boost/beast/http/status.hpp>
#include <boost/beast/http/verb.hpp>
#include <cstring>
#include <span>
#include <string_view>

#include "proxy/http/head_fields.hpp"

namespace sluice::http {

/// Beast's HTTP/1 parser (its syntax checks, framing and limits unchanged), keeping the head in
/// a connection's HeadFields instead of a Beast message, and copying body bytes into the room
/// the relay lends it, as Beast's buffer_body does: when the room is full, parsing stops with
/// http::error::need_buffer. One parser per message; the HeadFields outlive it.
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

  /// Where the next body bytes go.
  void body_into(std::span<char> room) noexcept { room_ = room; }
  /// The part of the room not yet filled.
  std::size_t room_left() const noexcept { return room_.size(); }

 private:
  void on_request_impl(boost::beast::http::verb method, string_view method_string,
                       string_view target, int version, error_code&) override {
    head_.clear();
    method_ = method;
    method_string_ = head_.keep(method_string);
    target_ = head_.keep(target);
    version_ = static_cast<unsigned>(version);
  }

  void on_response_impl(int status, string_view reason, int version, error_code&) override {
    head_.clear();
    status_ = static_cast<unsigned>(status);
    reason_ = head_.keep(reason);
    version_ = static_cast<unsigned>(version);
  }

  void on_field_impl(boost::beast::http::field id, string_view name, string_view value,
                     error_code&) override {
    head_.add(id, name, value);
  }

  void on_header_impl(error_code&) override { head_.seal(); }

  void on_body_init_impl(const boost::optional<std::uint64_t>&, error_code&) override {}

  std::size_t on_body_impl(string_view body, error_code& ec) override { return take(body, ec); }

  void on_chunk_header_impl(std::uint64_t, string_view, error_code&) override {}

  std::size_t on_chunk_body_impl(std::uint64_t, string_view body, error_code& ec) override {
    return take(body, ec);
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
  unsigned status_ = 0;
  HeadFields::Span reason_;
};

using RequestParser = MessageParser<true>;
using ResponseParser = MessageParser<false>;

}  // namespace sluice::http
