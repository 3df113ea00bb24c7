#include "proxy/http/h2/http1_bridge.hpp"

#include <array>
#include <boost/asio/write.hpp>
#include <chrono>
#include <memory>
#include <string>

#include "proxy/http/h2/call_body.hpp"
#include "proxy/http/h2/upstream_session.hpp"
#include "proxy/http/http1_body.hpp"
#include "proxy/http/relay_heads.hpp"
#include "proxy/http/request_rewrite.hpp"
#include "proxy/http/responses.hpp"
#include "proxy/http/upstream_request.hpp"
#include "proxy/io/socket_io.hpp"
#include "proxy/tls/contexts.hpp"

namespace sluice::http::h2 {
namespace {

/// The response head of `call` for an HTTP/1.x client: its status line, the upstream's fields
/// but the limit fields (the proxy's own instead), and the framing.
void write_client_head(Call& call, unsigned version, bool chunked, bool keep_alive,
                       const pipeline::Decision& decision, config::LimitsHeaders mode,
                       HeadText& head) {
  const unsigned status = call.head.status();
  write_status_line(head, version, status,
                    http::obsolete_reason(static_cast<http::status>(status)));
  const bool limits = writes_limit_headers(decision, mode);
  for (const nghttp2_nv& field : call.head.list()) {
    const std::string_view name(reinterpret_cast<const char*>(field.name), field.namelen);
    if (name.starts_with(':') || (limits && is_limit_field(name, mode))) {
      continue;
    }
    write_field(head, name,
                std::string_view(reinterpret_cast<const char*>(field.value), field.valuelen));
  }
  write_limit_headers(head, decision, mode);
  if (chunked) {
    append(head, "transfer-encoding: chunked\r\n");
  }
  write_persistence(head, version, keep_alive);
  end_head(head);
}

bool has_field(Call& call, std::string_view wanted) {
  for (const nghttp2_nv& field : call.head.list()) {
    if (std::string_view(reinterpret_cast<const char*>(field.name), field.namelen) == wanted) {
      return true;
    }
  }
  return false;
}

}  // namespace

io::Awaitable<RelayOutcome> relay_http1_to_http2(ClientConnection& downstream,
                                                 const Exchange& exchange, LoopContext& loop) {
  io::Stream& client = downstream.stream;
  RequestParser& parser = *downstream.state->parser;
  const config::ProxyConfig& config = exchange.config();
  const config::Timeouts& timeouts = config.timeouts;
  const unsigned version = parser.version();
  HeadText& head = downstream.state->relay_head;
  const bool with_body = !parser.is_done();
  const io::ChunkPool::Lease chunk = loop.chunks.borrow();
  MessageBodySource request_body(client, downstream.state->buffer, parser, std::span<char>(*chunk),
                                 timeouts.idle);
  HeldRequestBody held;  // a rewrite made on a route that rewrites requests only
  if (with_body) {
    held = co_await hold_http1_request_body(client, *exchange.decision.route, exchange.request,
                                            request_body, timeouts.idle, loop.proxy.metrics);
    if (held.client_gone) {
      co_return RelayOutcome{};
    }
  }
  const std::unique_ptr<RequestRewrite>& rewrite = held.rewrite;
  const bool continued = held.continued;
  FieldList fields;
  const BegunCall begun = co_await begin_call(
      loop, exchange, rewrite ? rewrite->head() : exchange.request, downstream, fields,
      std::make_shared<io::Signal>(client.get_executor()), with_body, false);
  if (begun.failure != UpstreamFailure::none) {
    co_return failed_before_response(begun.failure);
  }
  UpstreamSession* const session = begun.session.get();
  Call* const call = begun.call.get();
  const auto started = std::chrono::steady_clock::now();
  if (with_body) {
    if (!continued && expects_continue(exchange.request)) {
      if (co_await send_continue(client, timeouts.idle)) {
        session->cancel(*call);
        co_return RelayOutcome{};
      }
    }
    BodySource& body =
        rewrite ? static_cast<BodySource&>(*rewrite) : static_cast<BodySource&>(request_body);
    CallBodySink upstream(*session, *call, timeouts.upstream);
    BodyCarry sent_body(body, upstream);  // no coroutine of its own while nothing waits
    if (!sent_body.now()) {
      co_await sent_body.rest();
    }
    const Carried& sent = sent_body.result();
    if (sent.error && !call->closed) {  // the client went away, or its body is malformed
      session->cancel(*call);
      co_return RelayOutcome{};
    }
  }
  while (!call->head_done && !call->closed) {
    const bool changed = co_await call->changed->wait_for(timeouts.upstream);
    if (!changed) {
      session->cancel(*call);
      co_return failed_before_response(UpstreamFailure::timeout);
    }
  }
  if (!call->head_done) {
    co_return failed_before_response(UpstreamFailure::broken);
  }
  RelayOutcome outcome{.keep_alive = exchange.keep_alive && parser.is_done(),
                       .status = call->head.status(),
                       .failure = UpstreamFailure::none,
                       .upstream_time = std::chrono::steady_clock::now() - started};
  const bool no_body =
      parser.method() == http::verb::head || outcome.status == 204 || outcome.status == 304;
  const bool chunked = !no_body && !has_field(*call, "content-length") && version >= kHttp11;
  if (!no_body && !chunked && !has_field(*call, "content-length")) {
    outcome.keep_alive = false;  // HTTP/1.0 without a length: the body runs until the close
  }
  exchange.begin_cost(call->head, outcome.status);
  head.clear();
  write_client_head(*call, version, chunked, outcome.keep_alive, exchange.decision,
                    config.limits_headers, head);
  const std::array<net::const_buffer, 1> head_piece{net::buffer(head.data(), head.size())};
  const beast::error_code head_failed = co_await io::send(client, head_piece, timeouts.idle);
  if (head_failed) {
    session->cancel(*call);
    co_return RelayOutcome{.status = outcome.status};
  }
  if (!no_body) {
    CallBodySource body(*session, *call, timeouts.upstream);
    SocketBodySink to_client(client, nullptr, chunked, timeouts.idle);
    // No coroutine of its own while nothing waits.
    BodyCarry carried_body(body, to_client, exchange.cost);
    if (!carried_body.now()) {
      co_await carried_body.rest();
    }
    const Carried& carried = carried_body.result();
    if (carried.error) {
      if (carried.source_failed) {  // the upstream reset the call, or went silent
        outcome.failure = failure_of(carried.error);
      }
      session->cancel(*call);
      outcome.keep_alive = false;
      co_return outcome;
    }
  }
  if (no_body && !call->body_done) {
    session->cancel(*call);
  }
  co_return outcome;
}

}  // namespace sluice::http::h2
