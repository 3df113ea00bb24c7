#pragma once

#include <nghttp2/nghttp2.h>
#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "proxy/io/net.hpp"
#include "proxy/io/signal.hpp"
#include "proxy/io/stream.hpp"

namespace sluice::http::h2 {

/// Frames go to the socket in batches of about this much (the client's and the upstream's side).
inline constexpr std::size_t kWriteBatch = 64 * 1024;

/// nghttp2's bytes (names, values, data) as text.
inline std::string_view text_of(const std::uint8_t* bytes, std::size_t length) noexcept {
  return {reinterpret_cast<const char*>(bytes), length};
}

/// Whether body bytes lent to nghttp2 (`out`, of a client's stream or an upstream's call) have
/// all been taken: true; also true, with `ec` set to `gone`, when the stream closed first; false
/// while they wait.
inline bool lent_bytes_taken(std::span<const char> out, bool closed, beast::error_code& ec,
                             const beast::error_code& gone) noexcept {
  if (out.empty()) {
    return true;
  }
  if (closed) {
    ec = gone;
    return true;
  }
  return false;
}

/// One request stream of an HTTP/2 connection: its request as received (pseudo-header fields
/// apart, then the regular fields), its body as it arrives, and the response body
/// on its way out. Shared by the Session, which fills it from frames, and the coroutine that
/// serves it, which the Session wakes (`changed`) when something happened to it.
struct RequestStream {
  explicit RequestStream(const io::Executor& executor, std::int32_t stream_id)
      : id(stream_id), changed(executor) {}

  const std::int32_t id;
  io::Signal changed;  ///< Body bytes came, the body ended, the response drained, or it closed.

  /// A regular field as received: where its name and value are in `field_text`.
  struct ReceivedField {
    std::uint32_t name, name_length, value, value_length;
  };

  std::string method, scheme, authority, path;
  std::string field_text;             ///< The regular fields' names and values, one after another,
  std::vector<ReceivedField> fields;  ///< in the order they came, cookie aside.
  std::string cookie;  ///< Cookie crumbs joined with "; ", as HTTP/1.1 wants (RFC 9113 §8.2.3).
  std::size_t header_bytes = 0;  ///< As SETTINGS_MAX_HEADER_LIST_SIZE counts them.
  bool too_large = false;        ///< Its header list went past the limit: answered 431.

  std::string body;                 ///< Request body received, not yet passed on.
  std::uint64_t body_received = 0;  ///< Request body bytes received in all, dropped ones too.
  bool body_done = false;           ///< END_STREAM came: the request is whole.
  bool discard_body = false;        ///< Its body is not wanted (the stream was answered): dropped.

  /// The response body's next bytes, lent by the serving coroutine until they are all taken.
  std::span<const char> out;
  bool out_done = false;  ///< The response body ends after `out`.
  /// Trailer fields sent after the body (gRPC's status), if set before the body ends; they
  /// must stay valid until then.
  const std::vector<nghttp2_nv>* trailers = nullptr;

  /// The upstream connection it is relaying from, if any: closed when the stream is reset, so
  /// that its coroutine stops waiting on it.
  io::Stream* upstream = nullptr;

  /// Keeps a regular field (`name` in lower case, as HTTP/2 sends it).
  void add_field(std::string_view name, std::string_view value) {
    const auto at = static_cast<std::uint32_t>(field_text.size());
    field_text.append(name).append(value);
    fields.push_back({at, static_cast<std::uint32_t>(name.size()),
                      at + static_cast<std::uint32_t>(name.size()),
                      static_cast<std::uint32_t>(value.size())});
  }
  std::string_view name_of(const ReceivedField& field) const noexcept {
    return std::string_view(field_text).substr(field.name, field.name_length);
  }
  std::string_view value_of(const ReceivedField& field) const noexcept {
    return std::string_view(field_text).substr(field.value, field.value_length);
  }

  bool answered = false;  ///< The response's END_STREAM went out: it is whole.
  bool closed = false;    ///< The stream is over (answered whole, reset, or the connection went).
  std::uint32_t close_error = 0;  ///< Its HTTP/2 error code when it was reset.
};

/// What a connection caps: HTTP/2's own protections, on by default.
struct SessionLimits {
  std::uint32_t max_concurrent_streams = 128;
  std::uint32_t max_header_list_bytes = 16 * 1024;
  /// A stream's and the connection's receive windows: what one stream, and all of them, may
  /// have sent and not yet had passed on (bounds a connection's request-body memory).
  std::int32_t stream_window = 64 * 1024;
  std::int32_t connection_window = 256 * 1024;
};

/// Told by a Session when a request's header block is over, and when it sends GOAWAY.
class SessionEvents {
 public:
  virtual void on_request(const std::shared_ptr<RequestStream>& stream) = 0;
  virtual void on_goaway_sent(std::uint32_t error_code) = 0;

 protected:
  ~SessionEvents() = default;
};

/// The server side of one HTTP/2 connection, over nghttp2: bytes in (receive), frames out
/// (send_into), streams' requests to the SessionEvents, and their responses back. It knows no
/// socket, so that the fuzz target can drive it. nghttp2 checks the framing, HPACK and HTTP/2's
/// message rules; beside the limits above, it refuses SETTINGS and PING floods (queued ACKs),
/// CONTINUATION floods, and resets faster than a token bucket (CVE-2023-44487), each with a
/// GOAWAY. Windows reopen only as bodies are passed on (consume), so a slow upstream throttles
/// its client instead of filling memory.
class Session {
 public:
  Session(const SessionLimits& limits, SessionEvents& events, const io::Executor& executor);
  ~Session();
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;
  Session(Session&&) = delete;
  Session& operator=(Session&&) = delete;

  /// Takes bytes from the client; false when the connection must end (a connection error: the
  /// GOAWAY saying why, if any, is among what send_into gives next).
  bool receive(std::span<const char> bytes);
  /// Appends the frames ready to go, up to about `limit` bytes; false on a fatal error.
  bool send_into(std::vector<char>& out, std::size_t limit);
  /// Whether the connection has more to do: read (not told to go away) or write.
  bool alive() const noexcept;
  /// The streams open: requests begun and not over.
  std::size_t open_streams() const noexcept { return streams_.size(); }
  /// Whether a request's header block has begun and not ended (HEADERS without END_HEADERS
  /// yet).
  bool header_block_open() const noexcept { return header_block_stream_ != 0; }

  /// Starts the response of `stream`: `fields` (:status first), then a body from `stream.out`
  /// if `with_body`, else the stream ends with the header.
  void respond(RequestStream& stream, std::span<const nghttp2_nv> fields, bool with_body);
  /// More of the response body is in `stream.out`, or it is done.
  void resume(RequestStream& stream);
  /// `count` bytes of its request body were passed on: its window may reopen by as much.
  void consume(RequestStream& stream, std::size_t count);
  /// Ends the stream with RST_STREAM and `error_code`.
  void reset(RequestStream& stream, std::uint32_t error_code);
  /// GOAWAY: no new streams; the open ones finish.
  void go_away();
  /// The connection is gone: every stream is closed and told, and nothing more is sent.
  void abandon();

 private:
  static int on_begin_headers(nghttp2_session*, const nghttp2_frame* frame, void* self);
  static int on_header(nghttp2_session*, const nghttp2_frame* frame, const std::uint8_t* name,
                       std::size_t name_length, const std::uint8_t* value, std::size_t value_length,
                       std::uint8_t flags, void* self);
  static int on_frame_received(nghttp2_session*, const nghttp2_frame* frame, void* self);
  static int on_invalid_frame(nghttp2_session*, const nghttp2_frame* frame, int error, void* self);
  static int on_frame_sent(nghttp2_session*, const nghttp2_frame* frame, void* self);
  static int on_data(nghttp2_session*, std::uint8_t flags, std::int32_t stream_id,
                     const std::uint8_t* data, std::size_t length, void* self);
  static int on_stream_closed(nghttp2_session*, std::int32_t stream_id, std::uint32_t error_code,
                              void* self);
  static ssize_t read_body(nghttp2_session*, std::int32_t stream_id, std::uint8_t* into,
                           std::size_t length, std::uint32_t* flags, nghttp2_data_source* source,
                           void* self);

  RequestStream* find(std::int32_t stream_id) noexcept;

  SessionEvents& events_;
  io::Executor executor_;
  nghttp2_session* session_ = nullptr;
  std::uint32_t max_header_list_bytes_;
  /// The stream whose request header block is being received (one at a time on a
  /// connection), 0 if none.
  std::int32_t header_block_stream_ = 0;
  bool abandoned_ = false;
  std::unordered_map<std::int32_t, std::shared_ptr<RequestStream>> streams_;
};

}  // namespace sluice::http::h2
