#include "proxy/http/relay.hpp"

#include <array>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <chrono>
#include <memory>
#include <optional>
#include <random>
#include <string>

#include "proxy/http/beast_http.hpp"
#include "proxy/http/header_text.hpp"
#include "proxy/http/http1_body.hpp"
#include "proxy/http/relay_heads.hpp"
#include "proxy/http/request_rewrite.hpp"
#include "proxy/http/responses.hpp"
#include "proxy/http/tunnel.hpp"
#include "proxy/http/upstream_pool.hpp"
#include "proxy/http/upstream_request.hpp"
#include "proxy/io/socket_calls.hpp"
#include "proxy/io/socket_io.hpp"
#include "proxy/io/spare_pool.hpp"
#include "proxy/pipeline/http_text.hpp"

namespace sluice::http {
namespace {

/// A body that could not be read for what it holds, not for the connection it comes on.
bool is_malformed(const Carried& carried) noexcept {
  const beast::error_code& ec = carried.error;
  return carried.source_failed &&
         ec.category() == beast::http::make_error_code(http::error::bad_chunk).category() &&
         ec != http::error::partial_message && ec != http::error::end_of_stream;
}

/// Writes an HTTP/1.1 client's request upstream: its head, then its body as the connection
/// receives it (or as `rewrite` holds it), after a 100 (Continue) when the client waits for one
/// and has not had it yet.
class ClientRequestWriter final : public RequestWriter {
 public:
  ClientRequestWriter(ClientConnection& downstream, const Exchange& exchange,
                      MessageBodySource<true>& body, RequestRewrite* rewrite, bool continued)
      : downstream_(downstream),
        exchange_(exchange),
        body_(body),
        rewrite_(rewrite),
        continued_(continued) {}

  void connected(io::Stream*) noexcept override {}

  io::Awaitable<RequestWritten> write(io::Stream& server, bool first_try) override {
    io::Stream& client = downstream_.stream;
    RequestParser& parser = *downstream_.state->parser;
    const config::Timeouts& timeouts = exchange_.config().timeouts;
    const HeadText& head = downstream_.state->relay_head;
    if (first_try && !continued_ && !parser.is_done() && expects_continue(exchange_.request)) {
      // The client waits for this before it sends the body.
      if (const beast::error_code ec = co_await send_continue(client, timeouts.idle)) {
        co_return RequestWritten{.error = ec, .client_failed = true};
      }
    }
    if (rewrite_ == nullptr && parser.is_done()) {  // no body, the usual request: one write
      const std::array<net::const_buffer, 1> pieces{net::buffer(head.data(), head.size())};
      const io::SendStart start = send_now(server, pieces);
      if (start.finished) {
        co_return RequestWritten{.error = start.error, .at_once = true};
      }
      co_return RequestWritten{
          .error = co_await send_rest(server, pieces, start.sent, timeouts.upstream)};
    }
    BodySource& body = rewrite_ != nullptr ? static_cast<BodySource&>(*rewrite_) : body_;
    const bool chunked = rewrite_ != nullptr ? rewrite_->head().chunked : parser.chunked();
    SocketBodySink upstream(server, &head, chunked, timeouts.upstream);
    BodyCarry carry(body, upstream);
    if (carry.now()) {
      co_return RequestWritten{.error = carry.result().error,
                               .client_failed = carry.result().source_failed,
                               .malformed = is_malformed(carry.result()),
                               .at_once = true};
    }
    co_await carry.rest();
    co_return RequestWritten{.error = carry.result().error,
                             .client_failed = carry.result().source_failed,
                             .malformed = is_malformed(carry.result())};
  }

 private:
  ClientConnection& downstream_;
  const Exchange& exchange_;
  MessageBodySource<true>& body_;
  RequestRewrite* rewrite_;
  bool continued_;  ///< The client has had its 100 (Continue).
};

}  // namespace

io::Awaitable<RelayOutcome> relay(ClientConnection& downstream, const Exchange& exchange,
                                  LoopContext& loop) {
  if (exchange.upstream().http2) {
    if (loop.relay_to_http2 == nullptr) {
      co_return failed_before_response(UpstreamFailure::connect);
    }
    co_return co_await loop.relay_to_http2(downstream, exchange, loop);
  }
  io::Stream& client = downstream.stream;
  beast::flat_buffer& client_buffer = downstream.state->buffer;
  RequestParser& parser = *downstream.state->parser;
  HeadText& head = downstream.state->relay_head;
  const pipeline::Decision& decision = exchange.decision;
  const config::ProxyConfig& config = exchange.config();
  const config::Timeouts& timeouts = config.timeouts;
  const unsigned version = parser.version();
  // RFC 9110 §7.8: ignored in HTTP/1.0; and `Connection: upgrade` without an Upgrade field (all
  // Beast's upgrade() looks at) asks for no protocol.
  const bool upgrade = parser.upgrade() && version >= kHttp11 &&
                       !parser.head().value_of(http::field::upgrade).empty();
  bool keep_alive = exchange.keep_alive;
  const io::ChunkPool::Lease chunk = loop.chunks.borrow();
  // Without a body, a request that fails on a parked connection can be sent again.
  const bool repeatable = parser.is_done() && idempotent(parser.method());
  MessageBodySource request_body(client, client_buffer, parser, std::span<char>(*chunk),
                                 timeouts.idle);
  HeldRequestBody held;  // a rewrite made on a route that rewrites requests only
  if (!parser.is_done()) {
    held = co_await hold_http1_request_body(client, *decision.route, exchange.request, request_body,
                                            timeouts.idle, loop.proxy.metrics);
    if (held.client_gone) {
      co_return RelayOutcome{};
    }
  }
  const std::unique_ptr<RequestRewrite>& rewrite = held.rewrite;
  const bool continued = held.continued;
  head.clear();
  write_upstream_head(rewrite ? rewrite->head() : exchange.request, exchange.decision.auth,
                      downstream.peer_address_text, client.secure(), upgrade, head);
  ClientRequestWriter writer(downstream, exchange, request_body, rewrite.get(), continued);
  UpstreamConnectionPtr connection;
  std::chrono::steady_clock::time_point sent_at;
  const UpstreamRequest sent =
      co_await request_upstream(loop, exchange, repeatable, writer, connection, sent_at);
  if (sent.client_gone) {
    if (sent.malformed) {  // a bad chunk, found after the head went upstream: still a 400
      co_return RelayOutcome{.answer = http::status::bad_request};
    }
    co_return RelayOutcome{};
  }
  UpstreamFailure failure = sent.failure;
  const bool switching = failure == UpstreamFailure::none &&
                         connection->response->result() == http::status::switching_protocols;
  // A protocol switch nobody asked for, or that does not say to what.
  if (switching &&
      (!upgrade || connection->response->head().value_of(http::field::upgrade).empty())) {
    failure = UpstreamFailure::broken;
  }
  // Transfer codings besides chunked cannot reach an HTTP/1.0 client (RFC 9112 §6.1).
  const bool codings =
      failure == UpstreamFailure::none && connection->response->transfer_codings().others();
  if (codings && version < kHttp11) {
    failure = UpstreamFailure::broken;
  }
  if (failure != UpstreamFailure::none) {
    co_return failed_before_response(failure);
  }
  io::Stream& server = connection->stream;
  beast::flat_buffer& server_buffer = connection->buffer;
  RelayOutcome outcome;
  outcome.upstream_time = std::chrono::steady_clock::now() - sent_at;
  ResponseParser& response = *connection->response;
  outcome.status = response.status();
  head.clear();
  if (switching) {
    write_client_head(response, version, {}, false, true, decision, config.limits_headers, head);
    client.expires_after(timeouts.idle);
    auto [ec, n] =
        co_await net::async_write(client, net::buffer(head.data(), head.size()), io::use_nothrow);
    if (!ec) {
      co_await tunnel(client, client_buffer, server, server_buffer, timeouts.idle);
    }
    co_return outcome;  // an upgraded connection is never reused
  }
  // How the body goes on. A 204 has no Content-Length or Transfer-Encoding (RFC 9112 §6.1,
  // §6.2). A body of unknown length is chunked anew for HTTP/1.1 and sent until close to
  // HTTP/1.0. The upstream's codings besides chunked go on as they came: chunked anew when
  // chunked was last, else until close (§6.3, rule 4).
  ClientFraming framing;
  bool until_close = false;
  if (response.status() != 204) {
    const bool unknown_length =
        response.chunked() || (!response.content_length() && !response.is_done());
    framing.chunked = version >= kHttp11 && (response.chunked() || (unknown_length && !codings));
    framing.codings = codings;
    if (const auto length = response.content_length()) {
      framing.length = *length;
    }
    until_close = unknown_length && !framing.chunked;
  }
  keep_alive = keep_alive && !until_close;
  exchange.begin_cost(response.head(), response.status());
  write_client_head(response, version, framing, keep_alive, false, decision, config.limits_headers,
                    head);
  MessageBodySource body(server, server_buffer, response, std::span<char>(*chunk),
                         timeouts.upstream);
  SocketBodySink to_client(client, &head, framing.chunked && !response.is_done(), timeouts.idle);
  BodyCarry carry(body, to_client, exchange.cost);
  if (!carry.now()) {
    co_await carry.rest();
  }
  const Carried& carried = carry.result();
  if (carried.source_failed && !carried.started) {  // a body broken from its start: 502 (504)
    co_return failed_before_response(failure_of(carried.error));
  }
  const beast::error_code& ec = carried.error;
  const bool upstream_failed = carried.source_failed;
  // Bytes after the response were not asked for: never taken for the next one (RFC 9112 §6.3).
  if (!ec && response.keep_alive() && response.is_done() && server_buffer.size() == 0) {
    loop.pool.give_back(exchange.upstream(), std::move(connection));
  }
  if (ec && upstream_failed) {
    outcome.failure = failure_of(ec);
  }
  outcome.keep_alive = !ec && keep_alive;
  co_return outcome;
}

}  // namespace sluice::http
