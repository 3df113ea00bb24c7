// HTTP/1 messages through the proxy's message parser (Beast's parser behind MessageParser,
// HeadFields) and MessageRead, read as the session reads requests from a client and the relay
// reads responses from an upstream: the head with its limit, then the body the way the relay
// takes it (whole when it is all there, else piece by piece through a fixed room, chunked
// included), then the next message of a persistent connection. Input that starts with "HTTP/"
// is what an upstream sends (responses, interim ones included), anything else what a client
// sends (requests).
//
// Each input is read twice: in reads as large as the buffer allows into the relay's 16 KiB
// room, and in small reads of varying size into a small room. Both must read the same messages,
// fields and bodies, and fail alike (Message::error): how TCP splits the bytes must not change what
// the proxy sees. Responses are read a third time as the answer to a HEAD request (no body).

// GCC 12 with the sanitizers at -O2 reports a false maybe-uninitialized inside Beast's
// basic_parser (an empty boost::optional) once put() is inlined (see message_read_test.cpp).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

#include <algorithm>
#include <boost/asio/buffer.hpp>
#include <boost/asio/error.hpp>
#include <boost/beast/core/error.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http/error.hpp>
#include <boost/beast/http/field.hpp>
#include <boost/beast/http/status.hpp>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "proxy/http/head_fields.hpp"
#include "proxy/http/message_parser.hpp"
#include "proxy/http/message_read.hpp"
#include "proxy/io/spare_pool.hpp"

namespace {

// Project symbols (one place to re-qualify them).
using sluice::http::HeadFields;
using sluice::http::MessageParser;
using sluice::http::MessageRead;
using sluice::io::kChunkBytes;

namespace beast = boost::beast;
namespace http = boost::beast::http;

/// The session's and the relay's header limit (kMaxHeaderBytes, proxy/http/message_parser.hpp).
constexpr std::uint32_t kHeaderLimit = 16 * 1024;
/// Messages read from one connection at most.
constexpr int kMaxMessages = 16;

void require(bool condition, const char* what) {
  if (!condition) {
    std::fprintf(stderr, "http_fuzz: %s\n", what);
    std::abort();
  }
}

/// The other end of the connection: hands the input out in reads of at most the room's size
/// and, when `seed` is not 0, of a pseudo-random size from 1 to 24 bytes; then end of stream.
class Peer {
 public:
  Peer(std::string_view bytes, std::uint32_t seed) : rest_(bytes), state_(seed) {}

  std::size_t read_some(boost::asio::mutable_buffer room, beast::error_code& error) {
    if (rest_.empty()) {
      error = boost::asio::error::eof;
      return 0;
    }
    std::size_t n = std::min(room.size(), rest_.size());
    if (state_ != 0) {
      state_ ^= state_ << 13;  // xorshift32
      state_ ^= state_ >> 17;
      state_ ^= state_ << 5;
      n = std::min<std::size_t>(n, 1 + state_ % 24);
    }
    std::memcpy(room.data(), rest_.data(), n);
    rest_.remove_prefix(n);
    error = {};
    return n;
  }

 private:
  std::string_view rest_;
  std::uint32_t state_;
};

/// What was read of one message, to compare two readings.
struct Message {
  /// How reading it failed, as the proxy tells failures apart ("" when it did not): a request
  /// head that never began ("closed": the client is done) or that is refused (400 or 431, by
  /// whichever check Beast's parser makes first: it depends on how the bytes arrive); any other
  /// failure ends the connection.
  std::string error;
  std::string detail;  ///< The error code itself (not compared).
  std::string start;   ///< Method and target, or status and reason.
  unsigned version = 0;
  std::vector<std::string> fields;  ///< Id, name and value of each, in order.
  bool keep_alive = false;
  bool chunked = false;
  bool upgrade = false;
  std::optional<std::uint64_t> content_length;
  std::string body;

  bool operator==(const Message& other) const {
    return error == other.error && start == other.start && version == other.version &&
           fields == other.fields && keep_alive == other.keep_alive && chunked == other.chunked &&
           upgrade == other.upgrade && content_length == other.content_length && body == other.body;
  }
};

std::string describe(const beast::error_code& ec) {
  return ec.category().name() + std::string(":") + std::to_string(ec.value());
}

/// Reads until `parser` has the head (as the session and the relay do). False on an error,
/// recorded in `message`.
template <bool isRequest>
bool read_head(beast::flat_buffer& buffer, Peer& peer, MessageParser<isRequest>& parser,
               Message& message) {
  beast::error_code ec;
  for (MessageRead<isRequest> read(buffer, parser, MessageRead<isRequest>::Until::header_done);
       read.wants_bytes(ec);) {
    beast::error_code error;
    const std::size_t n = peer.read_some(read.room(), error);
    read.received(n, error, ec);
  }
  if (ec) {
    const bool closed = ec == http::error::end_of_stream;
    message.error = !isRequest ? "head failed" : closed ? "head closed" : "head refused";
    message.detail = describe(ec);
    return false;
  }
  require(parser.is_header_done(), "a read head without its header done");
  return true;
}

/// The head as the session and the relay look at it.
template <bool isRequest>
void record_head(const MessageParser<isRequest>& parser, const HeadFields& head, Message& message) {
  if constexpr (isRequest) {
    message.start = std::string(parser.method_string()) + " " + std::string(parser.target());
    require(parser.method_string() == http::to_string(parser.method()) ||
                parser.method() == http::verb::unknown,
            "a method that is not its own name");
  } else {
    message.start = std::to_string(parser.status()) + " " + std::string(parser.reason());
    (void)http::obsolete_reason(parser.result());
  }
  message.version = parser.version();
  require(head.headers().size() == head.size(), "fields without their views");
  for (std::size_t i = 0; i < head.size(); ++i) {
    message.fields.push_back(std::to_string(static_cast<unsigned>(head.id(i))) + " " +
                             std::string(head.at(i).name) + ": " + std::string(head.at(i).value));
    require(head.id(i) == http::string_to_field(head.at(i).name), "a field with another's id");
  }
  (void)head.value_of(http::field::host);
  (void)head.value_of(http::field::connection);
  (void)head.value_of("X-Forwarded-For");
  message.keep_alive = parser.keep_alive();
  message.chunked = parser.chunked();
  message.upgrade = parser.upgrade();
  if (const auto length = parser.content_length()) {
    message.content_length = *length;
  }
}

/// Reads the body as the relay does into `chunk`, appending it to `message`. False on an error.
template <bool isRequest>
bool read_body(beast::flat_buffer& buffer, Peer& peer, MessageParser<isRequest>& parser,
               std::span<char> chunk, Message& message) {
  if (parser.is_done()) {
    return true;
  }
  // WholeMessage (relay.cpp): a body of known length that is all in the buffer and fits the
  // room is parsed in one go; the relay asserts that it always is.
  const auto length = parser.content_length_remaining();
  if (!parser.chunked() && length && *length <= buffer.size() && *length <= chunk.size()) {
    parser.body_into(chunk);
    beast::error_code ec;
    buffer.consume(parser.put(buffer.data(), ec));
    require(!ec && parser.is_done(), "a whole body in the buffer did not parse in one go");
    message.body.append(chunk.data(), chunk.size() - parser.room_left());
    return true;
  }
  // pump (relay.cpp): the buffer gets room for a chunk's worth, then piece by piece.
  if (buffer.capacity() < kChunkBytes) {
    buffer.reserve(std::min(kChunkBytes, buffer.max_size()));
  }
  do {
    parser.body_into(chunk);
    beast::error_code ec;
    MessageRead<isRequest> read(buffer, parser, MessageRead<isRequest>::Until::progress);
    while (read.wants_bytes(ec)) {
      beast::error_code error;
      const std::size_t n = peer.read_some(read.room(), error);
      read.received(n, error, ec);
    }
    if (ec && ec != http::error::need_buffer) {
      message.error = "body failed";
      message.detail = describe(ec);
      return false;
    }
    message.body.append(chunk.data(), chunk.size() - parser.room_left());
  } while (!parser.is_done());
  return true;
}

/// Every request a client sends on one connection, as the session reads them.
std::vector<Message> read_requests(std::string_view bytes, std::uint32_t seed,
                                   std::span<char> chunk) {
  std::vector<Message> messages;
  Peer peer(bytes, seed);
  beast::flat_buffer buffer{kHeaderLimit};  // the client connection's
  HeadFields head;
  for (int i = 0; i < kMaxMessages; ++i) {
    head.trim();
    MessageParser<true> parser(head);
    parser.header_limit(kHeaderLimit);
    parser.body_limit(boost::none);
    Message& message = messages.emplace_back();
    if (!read_head(buffer, peer, parser, message)) {
      break;
    }
    record_head(parser, head, message);
    (void)parser.is_done();
    if (!read_body(buffer, peer, parser, chunk, message) || !parser.keep_alive()) {
      break;
    }
  }
  return messages;
}

/// Every response an upstream sends on one connection, as the relay reads them: interim ones
/// (1xx but 101) skipped before each final one; a 101 ends HTTP on the connection.
std::vector<Message> read_responses(std::string_view bytes, std::uint32_t seed,
                                    std::span<char> chunk, bool head_request) {
  std::vector<Message> messages;
  Peer peer(bytes, seed);
  beast::flat_buffer buffer;  // the upstream connection's: no limit but the parser's
  HeadFields head;
  for (int i = 0; i < kMaxMessages; ++i) {
    head.trim();
    MessageParser<false> parser(head);
    parser.header_limit(kHeaderLimit);
    parser.body_limit(boost::none);
    if (head_request) {
      parser.skip(true);
    }
    Message& message = messages.emplace_back();
    if (!read_head(buffer, peer, parser, message)) {
      break;
    }
    record_head(parser, head, message);
    if (parser.status() / 100 == 1) {
      if (parser.result() == http::status::switching_protocols) {
        break;  // a tunnel from here on
      }
      continue;
    }
    if (!read_body(buffer, peer, parser, chunk, message) || !parser.keep_alive()) {
      break;
    }
  }
  return messages;
}

/// Both readings of a connection must agree; when they do not, both are shown.
void require_same(const std::vector<Message>& a, const std::vector<Message>& b, const char* what) {
  if (a == b) {
    return;
  }
  for (const auto* reading : {&a, &b}) {
    std::fprintf(stderr, "reading %d:\n", reading == &a ? 1 : 2);
    for (const Message& m : *reading) {
      std::fprintf(stderr, "  [%s %s] %s v%u keep_alive=%d chunked=%d upgrade=%d body=%zu bytes\n",
                   m.error.c_str(), m.detail.c_str(), m.start.c_str(), m.version, m.keep_alive,
                   m.chunked, m.upgrade, m.body.size());
      for (const std::string& field : m.fields) {
        std::fprintf(stderr, "    %s\n", field.c_str());
      }
    }
  }
  require(false, what);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  std::uint32_t hash = 2166136261U;  // FNV-1a: the small reads and room depend on the input
  for (const char c : bytes) {
    hash = (hash ^ static_cast<unsigned char>(c)) * 16777619U;
  }
  const std::uint32_t seed = hash | 1U;
  std::vector<char> room(kChunkBytes);
  const std::span<char> whole(room);
  const std::span<char> small = whole.first(1 + hash % 61);
  if (bytes.starts_with("HTTP/")) {
    require_same(read_responses(bytes, 0, whole, false), read_responses(bytes, seed, small, false),
                 "responses read differently in other pieces");
    (void)read_responses(bytes, seed, small, true);
  } else {
    require_same(read_requests(bytes, 0, whole), read_requests(bytes, seed, small),
                 "requests read differently in other pieces");
  }
  return 0;
}
