#pragma once

#include <nghttp2/nghttp2.h>
#include <sys/types.h>

#include <cstdint>
#include <deque>
#include <memory>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "config/proxy_config.hpp"
#include "proxy/http/client_connection.hpp"
#include "proxy/http/exchange.hpp"
#include "proxy/http/h2/translate.hpp"
#include "proxy/http/loop_context.hpp"
#include "proxy/http/upstream_pool.hpp"
#include "proxy/io/signal.hpp"

namespace sluice::http::h2 {

/// One request stream to an HTTP/2 upstream: the request body as the relaying coroutine lends
/// it, and the response as it arrives. The upstream session wakes `changed` when something
/// happened (for an HTTP/2 client, its stream's own signal, so that one coroutine waits for both
/// sides), and keeps the call until nghttp2 is done with it.
struct Call {
  explicit Call(std::shared_ptr<io::Signal> signal) : changed(std::move(signal)) {}
  void wake() { changed->notify(); }

  const std::shared_ptr<io::Signal> changed;
  std::int32_t id = -1;

  std::span<const char> out;  ///< The request body's next bytes, lent until all are taken.
  bool out_done = false;      ///< The request body ends after `out`.

  FieldList head;  ///< The response's :status and fields, once `head_done`.
  bool head_done = false;
  FieldList trailers;      ///< Its trailer fields (gRPC's status), if any.
  std::string body;        ///< Response body received, not yet passed on.
  bool body_done = false;  ///< END_STREAM came.

  bool closed = false;            ///< The stream is over, whole or reset.
  std::uint32_t close_error = 0;  ///< Its HTTP/2 error code when reset.
};

/// A multiplexed connection to an HTTP/2 upstream (h2c:// with prior knowledge, h2:// with ALPN
/// h2), over nghttp2's client side: any number of Calls at once, up to what the upstream allows.
/// A coroutine reads its frames and one writes them; it ends on a connection error, a GOAWAY
/// once its calls are over, or when the loop drops it. Windows reopen as response bodies are
/// passed on (consume), so a slow client throttles the upstream rather than filling memory.
class UpstreamSession : public std::enable_shared_from_this<UpstreamSession> {
 public:
  UpstreamSession(UpstreamConnectionPtr connection, const config::Upstream& upstream);
  ~UpstreamSession();
  UpstreamSession(const UpstreamSession&) = delete;
  UpstreamSession& operator=(const UpstreamSession&) = delete;
  UpstreamSession(UpstreamSession&&) = delete;
  UpstreamSession& operator=(UpstreamSession&&) = delete;

  /// Starts its reader and writer.
  void start();
  /// Whether it can take another call now.
  bool has_room() const noexcept;
  bool ended() const noexcept { return ended_; }

  /// Sends the request of `call` (`fields`, then a body from `call.out` if `with_body`); false
  /// when the session cannot (it is ending).
  bool begin(const std::shared_ptr<Call>& call, std::span<const nghttp2_nv> fields, bool with_body);
  /// More of the request body is in `call.out`, or it is done.
  void resume(Call& call);
  /// `count` bytes of the response body were passed on.
  void consume(Call& call, std::size_t count);
  /// Ends the call with RST_STREAM CANCEL unless it is over (its client went away, or timed out).
  void cancel(Call& call);

 private:
  io::Awaitable<void> read_frames();
  io::Awaitable<void> write_frames();
  void end();

  static int on_header(nghttp2_session*, const nghttp2_frame* frame, const std::uint8_t* name,
                       std::size_t name_length, const std::uint8_t* value, std::size_t value_length,
                       std::uint8_t flags, void* self);
  static int on_frame_received(nghttp2_session*, const nghttp2_frame* frame, void* self);
  static int on_data(nghttp2_session*, std::uint8_t flags, std::int32_t stream_id,
                     const std::uint8_t* data, std::size_t length, void* self);
  static int on_stream_closed(nghttp2_session*, std::int32_t stream_id, std::uint32_t error_code,
                              void* self);
  static ssize_t read_body(nghttp2_session*, std::int32_t stream_id, std::uint8_t* into,
                           std::size_t length, std::uint32_t* flags, nghttp2_data_source* source,
                           void* self);

  Call* find(std::int32_t stream_id) noexcept;

  UpstreamConnectionPtr connection_;
  nghttp2_session* session_ = nullptr;
  io::Signal output_;
  std::vector<char> out_;
  std::unordered_map<std::int32_t, std::shared_ptr<Call>> calls_;
  bool ended_ = false;
};

/// One event loop's sessions with its HTTP/2 upstreams: a call goes on a session with room, or
/// on a new one (as Envoy's HTTP/2 connection pool does).
class UpstreamSessions {
 public:
  /// A session with room for a call to `upstream`, connected if need be; null and `error` when
  /// it cannot connect.
  io::Awaitable<std::shared_ptr<UpstreamSession>> session_for(
      const config::Upstream& upstream, UpstreamPool& connections,
      boost::asio::ssl::context* tls_context, const config::UpstreamTls& tls,
      limiter::Duration connect_timeout, beast::error_code& error);

 private:
  struct Entry {
    std::string url;  ///< The upstream's, as configured.
    std::vector<std::shared_ptr<UpstreamSession>> sessions;
  };
  std::deque<Entry> entries_;
};

/// A call begun on one of the loop's sessions with an HTTP/2 upstream, or why there is none.
struct BegunCall {
  std::shared_ptr<UpstreamSession> session;
  std::shared_ptr<Call> call;
  UpstreamFailure failure = UpstreamFailure::none;
};

/// Begins the exchange's request as a call to its HTTP/2 upstream, on a session of the loop's
/// with room (connected if need be): the fields of `request` (the exchange's, or its rewritten
/// head) as the HTTP/1.1 relay would send them (forwarding fields added, hop-by-hop ones
/// dropped; written in `fields`), plus `te: trailers` for a gRPC call, then its body if
/// `with_body`. The call wakes `signal`.
io::Awaitable<BegunCall> begin_call(LoopContext& loop, const Exchange& exchange,
                                    const RequestHead& request, const ClientConnection& client,
                                    FieldList& fields, std::shared_ptr<io::Signal> signal,
                                    bool with_body, bool grpc);

}  // namespace sluice::http::h2
