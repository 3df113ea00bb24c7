#pragma once

#include <memory>
#include <string>

#include "proxy/http/body.hpp"
#include "proxy/http/h2/connection.hpp"
#include "proxy/http/h2/session.hpp"
#include "proxy/http/h2/translate.hpp"

namespace sluice::http::h2 {

/// The request body of a client's stream as its DATA frames bring it: each piece is what came
/// since the last, and the stream's window reopens by as much once it is passed on. The client
/// gone (the stream closed) or silent for `timeout` ends it with an error.
class StreamBodySource final : public BodySource {
 public:
  StreamBodySource(Connection& connection, RequestStream& stream,
                   limiter::Duration timeout) noexcept
      : connection_(connection), stream_(stream), timeout_(timeout) {}

  bool next_now(BodyPiece& piece, beast::error_code& ec) override;
  io::Awaitable<beast::error_code> next(BodyPiece& piece) override;
  void taken(std::size_t count) noexcept override;

 private:
  Connection& connection_;
  RequestStream& stream_;
  limiter::Duration timeout_;
  std::string piece_;  ///< The bytes on their way, swapped with the stream's buffer.
};

/// A response body sent on a client's stream, after its head (Session::respond with a body):
/// each piece is lent to the stream until nghttp2 has taken it all, as the client's window
/// allows; the trailers go with the last. A client that takes nothing for `timeout` has its
/// stream reset (CANCEL); a stream closed meanwhile ends it with an error.
class StreamBodySink final : public BodySink {
 public:
  StreamBodySink(Connection& connection, RequestStream& stream, limiter::Duration timeout) noexcept
      : connection_(connection), stream_(stream), timeout_(timeout) {}

  bool send_now(const BodyPiece& piece, beast::error_code& ec) override;
  io::Awaitable<beast::error_code> send_rest() override;
  bool sent_now(beast::error_code& ec) override;

 private:
  Connection& connection_;
  RequestStream& stream_;
  limiter::Duration timeout_;
  std::unique_ptr<FieldList> trailers_;  ///< Made when there are any (seldom: gRPC).
};

}  // namespace sluice::http::h2
