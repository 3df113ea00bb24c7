#pragma once

#include <chrono>

#include "proxy/http/beast_http.hpp"
#include "proxy/http/exchange.hpp"
#include "proxy/http/loop_context.hpp"
#include "proxy/http/upstream_pool.hpp"
#include "proxy/io/net.hpp"

namespace sluice::http {

/// What an error on an upstream connection was: too slow (timeout), or anything else (broken).
UpstreamFailure failure_of(const beast::error_code& ec) noexcept;

/// How writing a request on one upstream connection ended.
struct RequestWritten {
  beast::error_code error;     ///< The upstream's side failed.
  bool client_failed = false;  ///< The client went away before its request was whole,
  bool malformed = false;      ///< or sent a body that is not valid (a bad chunk).
  /// Written without a wait: the response's deadline counts from the write's start, and the
  /// clock is read once fewer.
  bool at_once = false;
};

/// Writes a request to an HTTP/1.1 upstream connection: its head, then its body as the client's
/// codec receives it (an HTTP/1.1 connection, an HTTP/2 stream).
class RequestWriter {
 public:
  /// The upstream connection the request goes on, or null once it is dropped; an HTTP/2 stream
  /// closes it when its client resets the stream, so that nothing waits on it any longer.
  virtual void connected(io::Stream* server) noexcept = 0;
  /// Writes the request on `server`; `first_try`: no other connection was tried before.
  virtual io::Awaitable<RequestWritten> write(io::Stream& server, bool first_try) = 0;

 protected:
  ~RequestWriter() = default;
};

/// How a request to an HTTP/1.1 upstream ended, up to its response's head.
struct UpstreamRequest {
  UpstreamFailure failure = UpstreamFailure::none;
  bool client_gone = false;  ///< The client went away before its request was sent whole,
  bool malformed = false;    ///< or sent a body that is not valid (a bad chunk).
};

/// Sends the exchange's request to its HTTP/1.1 upstream through `writer` and reads the
/// response's head into `connection->response`: on a parked connection when there is one, else
/// a new one. A `repeatable` request (no body, idempotent) that fails on a parked connection
/// before any response byte is sent again, once, on a new one: the upstream most likely closed
/// the connection while it was idle. Interim responses (100, 102, 103) are skipped; a 101 ends
/// the wait like a final one. `sent_at`: when the request began to go out, on the connection
/// that answered.
io::Awaitable<UpstreamRequest> request_upstream(LoopContext& loop, const Exchange& exchange,
                                                bool repeatable, RequestWriter& writer,
                                                UpstreamConnectionPtr& connection,
                                                std::chrono::steady_clock::time_point& sent_at);

}  // namespace sluice::http
