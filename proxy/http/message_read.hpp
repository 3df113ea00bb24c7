#pragma once

#include <boost/asio/buffer.hpp>
#include <boost/asio/error.hpp>
#include <boost/beast/core/error.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/read_size.hpp>
#include <boost/beast/http/basic_parser.hpp>
#include <boost/beast/http/error.hpp>
#include <stdexcept>
#include <string_view>

#include "proxy/http/message_parser.hpp"

namespace sluice::http {

/// Reading a message (its head, or the next piece of its body) the way Beast's
/// http::async_read_header and http::async_read_some do, with their error rules, but without
/// their three nested operation objects: what the buffer already holds is parsed at once (no
/// trip through the event loop), and the caller's coroutine waits only for the socket:
///
///     MessageRead read(buffer, parser, MessageRead<true>::Until::header_done);
///     while (read.wants_bytes(ec)) {
///       auto [error, n] = co_await stream.async_read_some(read.room(), use_nothrow);
///       read.received(n, error, ec);
///     }
template <bool isRequest>
class MessageRead {
 public:
  enum class Until {
    header_done,  ///< as http::async_read_header
    progress,     ///< as http::async_read_some: until the parser uses bytes for something
  };

  MessageRead(boost::beast::flat_buffer& buffer, MessageParser<isRequest>& parser,
              Until until) noexcept
      : buffer_(buffer), parser_(parser), until_(until) {}

  /// Parses what the buffer holds. True when the parser needs bytes from the socket: they go
  /// in room(). False when the read is over, `ec` saying how (clear on success).
  bool wants_bytes(boost::beast::error_code& ec) {
    namespace http = boost::beast::http;
    for (;;) {
      if (ec || over_) {
        return false;
      }
      if (until_ == Until::header_done ? parser_.is_header_done() : progressed_) {
        return false;
      }
      if (buffer_.size() > 0 && !parsed_) {
        if (skip_empty_lines()) {
          buffer_.consume(parser_.put(buffer_.data(), ec));
          if (ec == http::error::need_more && parser_.framing_broken(unparsed())) {
            ec = http::error::bad_chunk;  // no byte to come can mend it: now, not at a timeout
          }
          if (ec != http::error::need_more) {
            progressed_ = true;
            continue;
          }
          ec = {};
        }
        parsed_ = true;  // nothing new to parse until the next read
      }
      // Beast's sizing: up to 64 KiB, within the buffer's limit.
      const std::size_t size = boost::beast::read_size(buffer_, 65536);
      if (size == 0) {
        ec = boost::beast::http::error::buffer_overflow;
        return false;
      }
      try {
        room_ = buffer_.prepare(size);
      } catch (const std::length_error&) {
        ec = boost::beast::http::error::buffer_overflow;
        return false;
      }
      return true;
    }
  }

  boost::asio::mutable_buffer room() const noexcept { return room_; }

  /// A read into room() ended with `n` bytes and `error`. End of stream completes a message
  /// that ends with its connection, or is end_of_stream before any byte of one.
  void received(std::size_t n, const boost::beast::error_code& error,
                boost::beast::error_code& ec) {
    buffer_.commit(n);
    parsed_ = false;
    if (error == boost::asio::error::eof) {
      over_ = true;
      if (parser_.got_some()) {
        ec = {};
        parser_.put_eof(ec);
      } else {
        ec = boost::beast::http::error::end_of_stream;
      }
      return;
    }
    ec = error;
  }

 private:
  /// Before a request line, drops the empty lines (CRLF) a client may send after a message: a
  /// server SHOULD ignore at least one (RFC 9112 §2.2). False when nothing is left to parse, or
  /// only a CR that may start one more: then more bytes are needed.
  bool skip_empty_lines() {
    if constexpr (isRequest) {
      while (!parser_.got_some()) {
        const auto* text = static_cast<const char*>(buffer_.data().data());
        const std::size_t size = buffer_.size();
        if (size >= 2 && text[0] == '\r' && text[1] == '\n') {
          buffer_.consume(2);
          continue;
        }
        return size > 0 && !(size == 1 && text[0] == '\r');
      }
    }
    return true;
  }

  std::string_view unparsed() const noexcept {
    return {static_cast<const char*>(buffer_.data().data()), buffer_.size()};
  }

  boost::beast::flat_buffer& buffer_;
  MessageParser<isRequest>& parser_;
  Until until_;
  boost::asio::mutable_buffer room_;
  bool parsed_ = false;      ///< The buffer's bytes were all offered to the parser.
  bool progressed_ = false;  ///< The parser used bytes, or stopped with an error or need_buffer.
  bool over_ = false;        ///< End of stream: no more reads.
};

}  // namespace sluice::http
