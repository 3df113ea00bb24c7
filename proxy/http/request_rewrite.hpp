#pragma once

#include <memory>
#include <string>

#include "config/proxy_config.hpp"
#include "proxy/http/body.hpp"
#include "proxy/http/request_head.hpp"
#include "proxy/io/stream.hpp"
#include "proxy/telemetry/metrics.hpp"

namespace sluice::http {

/// A request body held whole before it goes upstream, to be rewritten: on a route with
/// `cost_from.include_usage` (SPEC §9), an OpenAI streaming request is made to ask for its usage
/// chunk (cost::with_usage_requested). Every relay holds a body through it, whatever the
/// client's codec and the upstream's, then sends what head() says and reads the body from it:
///
///     if (RequestRewrite::wanted(route, request)) {
///       rewrite = std::make_unique<RequestRewrite>();  // nothing made on other routes
///       co_await rewrite->hold(request, body, metrics);  // then send rewrite->head(), *rewrite
///     }
///
/// It holds at most cost::kMaxRewrittenRequest bytes: a body that turns out longer (chunked, or
/// an HTTP/2 stream without a Content-Length) goes on unchanged, what was held first and the
/// rest as it streams. A body whose client failed while it was held goes on as far as it came,
/// then the failure, as if it had not been held.
class RequestRewrite final : public BodySource {
 public:
  /// Whether the request's body is one to hold: the route says `include_usage`, the body is
  /// JSON (Content-Type application/json, any parameters) and not empty, and its length, when
  /// known, is at most cost::kMaxRewrittenRequest. On any other route, a test of two members.
  static bool wanted(const config::Route& route, const RequestHead& request) noexcept;

  /// Reads the body of `request` from `source` to its end (or until the next piece would pass
  /// the cap, or the source fails), and rewrites it when it came whole (counted in `metrics`).
  /// `source` stays lent to it for what was not held, so it must outlive it.
  io::Awaitable<void> hold(const RequestHead& request, BodySource& source,
                           telemetry::Metrics& metrics);

  /// The head the upstream gets: the request's, with the rewritten body's Content-Length (and
  /// no longer chunked) when it was rewritten.
  const RequestHead& head() const noexcept { return head_; }
  bool rewritten() const noexcept { return rewritten_; }
  /// What was held (the rewritten body, if so).
  std::string_view held() const noexcept { return held_; }

  // The body, as it goes upstream: what was held, then the rest of the source's.
  bool next_now(BodyPiece& piece, beast::error_code& ec) override;
  io::Awaitable<beast::error_code> next(BodyPiece& piece) override;
  void taken(std::size_t count) noexcept override;

 private:
  enum class Stage { held, after_held, rest };

  BodySource* source_ = nullptr;
  RequestHead head_;
  std::string held_;
  BodyPiece pending_;  ///< The source's piece that would have passed the cap, still lent.
  bool has_pending_ = false;
  beast::error_code error_;  ///< The source's failure, after what was held.
  bool whole_ = false;       ///< The body ends with what was held.
  const Trailers* trailers_ = nullptr;
  bool rewritten_ = false;
  Stage stage_ = Stage::held;
  bool lent_by_source_ = false;  ///< The last piece given is the source's, to be taken back.
};

/// An HTTP/1.1 client's request body held as RequestRewrite::wanted() says (`rewrite`, nullptr
/// when the body goes as it comes), its `Expect: 100-continue` answered first (`continued`):
/// the proxy reads such a body before it asks the upstream anything.
struct HeldRequestBody {
  std::unique_ptr<RequestRewrite> rewrite;
  bool continued = false;
  bool client_gone = false;  ///< The 100 Continue could not be sent.
};
/// What both HTTP/1.1 relays (to an HTTP/1.1 upstream, to an HTTP/2 one) do before they send
/// the request on: `body` is the request's, read from `client`.
io::Awaitable<HeldRequestBody> hold_http1_request_body(io::Stream& client,
                                                       const config::Route& route,
                                                       const RequestHead& request, BodySource& body,
                                                       limiter::Duration timeout,
                                                       telemetry::Metrics& metrics);

}  // namespace sluice::http
