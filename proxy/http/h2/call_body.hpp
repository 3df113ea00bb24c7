#pragma once

#include <string>

#include "proxy/http/body.hpp"
#include "proxy/http/h2/upstream_session.hpp"

namespace sluice::http::h2 {

/// The trailer fields of a call's response.
class CallTrailers final : public Trailers {
 public:
  explicit CallTrailers(Call& call) noexcept : call_(call) {}
  void write(HeadOut& out) const override;

 private:
  Call& call_;
};

/// The response body of a call to an HTTP/2 upstream as its DATA frames bring it, and its
/// trailers with the last piece; the session's windows reopen as pieces are passed on. A call
/// reset, or silent for `timeout`, ends it with an error (the relay cancels the call).
class CallBodySource final : public BodySource {
 public:
  CallBodySource(UpstreamSession& session, Call& call, limiter::Duration timeout) noexcept
      : session_(session), call_(call), timeout_(timeout), trailers_(call) {}

  bool next_now(BodyPiece& piece, beast::error_code& ec) override;
  io::Awaitable<beast::error_code> next(BodyPiece& piece) override;
  void taken(std::size_t count) noexcept override { session_.consume(call_, count); }

 private:
  UpstreamSession& session_;
  Call& call_;
  limiter::Duration timeout_;
  CallTrailers trailers_;
  std::string piece_;  ///< The bytes on their way, swapped with the call's buffer.
};

/// A request body sent on a call to an HTTP/2 upstream: each piece is lent to the call until
/// nghttp2 has taken it all, as the upstream's window allows. A call closed meanwhile, or that
/// takes nothing for `timeout`, ends it with an error.
class CallBodySink final : public BodySink {
 public:
  CallBodySink(UpstreamSession& session, Call& call, limiter::Duration timeout) noexcept
      : session_(session), call_(call), timeout_(timeout) {}

  bool send_now(const BodyPiece& piece, beast::error_code& ec) override;
  io::Awaitable<beast::error_code> send_rest() override;
  bool sent_now(beast::error_code& ec) override;

 private:
  UpstreamSession& session_;
  Call& call_;
  limiter::Duration timeout_;
};

}  // namespace sluice::http::h2
