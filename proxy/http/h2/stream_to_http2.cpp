// An HTTP/2 stream relayed to an HTTP/2 upstream, gRPC calls included.
#include "proxy/http/h2/stream_to_http2.hpp"

#include <chrono>
#include <memory>
#include <optional>
#include <string>

#include "proxy/http/h2/call_body.hpp"
#include "proxy/http/h2/stream_answers.hpp"
#include "proxy/http/h2/stream_body.hpp"
#include "proxy/http/h2/upstream_session.hpp"
#include "proxy/http/relay_heads.hpp"
#include "proxy/http/request_rewrite.hpp"
#include "proxy/http/responses.hpp"

namespace sluice::http::h2 {
namespace {

/// grpc-timeout (gRPC over HTTP/2): up to 8 digits and a unit, H M S m u n; nullopt when
/// absent or malformed.
std::optional<limiter::Duration> grpc_timeout(std::string_view text) noexcept {
  if (text.size() < 2 || text.size() > 9) {
    return std::nullopt;
  }
  std::int64_t amount = 0;
  for (const char digit : text.substr(0, text.size() - 1)) {
    if (digit < '0' || digit > '9') {
      return std::nullopt;
    }
    amount = amount * 10 + (digit - '0');
  }
  using namespace std::chrono;
  switch (text.back()) {
    case 'H':
      return hours(amount);
    case 'M':
      return minutes(amount);
    case 'S':
      return seconds(amount);
    case 'm':
      return milliseconds(amount);
    case 'u':
      return microseconds(amount);
    case 'n':
      return duration_cast<limiter::Duration>(nanoseconds(amount));
    default:
      return std::nullopt;
  }
}

/// The response head of `call` as the client gets it: the upstream's fields but the limit
/// fields, which the proxy writes itself (as for an HTTP/1.1 upstream).
void add_limit_fields(FieldList& head, const pipeline::Decision& decision,
                      config::LimitsHeaders mode) {
  if (!writes_limit_headers(decision, mode)) {
    return;
  }
  head.erase_if([mode](std::string_view name) { return is_limit_field(name, mode); });
  HeadText lines;
  write_limit_headers(lines, decision, mode);
  head.add_lines(std::string_view(lines.data(), lines.size()));
}

}  // namespace

io::Awaitable<RelayOutcome> relay_to_http2(Connection& connection,
                                           const std::shared_ptr<RequestStream>& client,
                                           RequestState& state, const Exchange& exchange, bool grpc,
                                           bool& deadline_passed) {
  RequestStream& stream = *client;
  LoopContext& loop = connection.loop();
  Session& session = connection.session();
  const config::Timeouts& timeouts = exchange.config().timeouts;
  limiter::Duration deadline = timeouts.upstream;
  const std::optional<limiter::Duration> call_timeout =
      grpc ? grpc_timeout(state.request_head.value_of("grpc-timeout")) : std::nullopt;
  if (call_timeout) {
    deadline = std::min(deadline, *call_timeout);
  }
  const bool with_body = !(stream.body_done && stream.body.empty());
  StreamBodySource request_body(connection, stream, timeouts.idle);
  std::unique_ptr<RequestRewrite> rewrite;  // made on a route that rewrites requests only
  if (with_body && RequestRewrite::wanted(*exchange.decision.route, exchange.request)) {
    rewrite = std::make_unique<RequestRewrite>();
    co_await rewrite->hold(exchange.request, request_body, loop.proxy.metrics);
  }
  const auto started = std::chrono::steady_clock::now();
  const auto give_up_at = started + deadline;
  // The call wakes the client stream's signal (an aliasing pointer keeps the stream).
  const BegunCall begun =
      co_await begin_call(loop, exchange, rewrite ? rewrite->head() : exchange.request,
                          connection.client(), connection.response_fields(),
                          std::shared_ptr<io::Signal>(client, &client->changed), with_body, grpc);
  if (stream.closed) {
    if (begun.call) {
      begun.session->cancel(*begun.call);
    }
    co_return RelayOutcome{};
  }
  if (begun.failure != UpstreamFailure::none) {
    co_return failed_before_response(begun.failure);
  }
  UpstreamSession* const upstream_session = begun.session.get();
  Call* const call = begun.call.get();
  RelayOutcome outcome;
  // Both bodies at once (a gRPC call may stream both ways): each carried as far as it goes
  // whenever the stream's signal, which the call shares, says something changed.
  CallBodySink to_upstream(*upstream_session, *call, timeouts.upstream);
  BodyCarry going_up(
      rewrite ? static_cast<BodySource&>(*rewrite) : static_cast<BodySource&>(request_body),
      to_upstream);
  bool up_over = !with_body;
  CallBodySource response_body(*upstream_session, *call, timeouts.upstream);
  StreamBodySink to_client(connection, stream, timeouts.idle);
  BodyCarry going_down(response_body, to_client, exchange.cost);
  bool head_sent = false;
  bool down_over = false;
  for (;;) {
    if (stream.closed) {  // reset by the client, or its connection went
      upstream_session->cancel(*call);
      co_return outcome;
    }
    up_over = up_over || going_up.now();
    if (!head_sent && call->head_done) {
      head_sent = true;
      outcome.status = call->head.status();
      outcome.upstream_time = std::chrono::steady_clock::now() - started;
      exchange.begin_cost(call->head, outcome.status);
      add_limit_fields(call->head, exchange.decision, exchange.config().limits_headers);
      const bool body_down = !(call->body_done && call->body.empty());
      down_over = !body_down;
      stream.out = {};
      stream.out_done = !body_down;
      session.respond(stream, call->head.list(), body_down);
      connection.flush();
    }
    if (head_sent && !down_over) {
      down_over = going_down.now();
      if (down_over && going_down.result().error && !going_down.result().source_failed) {
        upstream_session->cancel(*call);  // the client's stream closed
        co_return outcome;
      }
    }
    if (head_sent && down_over && !(call->closed && !call->body_done)) {
      co_await await_close(connection, stream, timeouts.idle);  // until the last bytes went
      co_return outcome;
    }
    if (call->closed && !call->body_done) {  // the upstream reset it, or its connection went
      outcome.failure = UpstreamFailure::broken;
      if (!head_sent) {
        co_return failed_before_response(UpstreamFailure::broken);
      }
      session.reset(stream, NGHTTP2_INTERNAL_ERROR);
      connection.flush();
      co_return outcome;
    }
    const auto now = std::chrono::steady_clock::now();
    const limiter::Duration wait =
        head_sent && !call_timeout
            ? timeouts.idle
            : std::chrono::duration_cast<limiter::Duration>(give_up_at - now);
    bool changed = false;
    if (wait > limiter::Duration::zero()) {
      changed = co_await stream.changed.wait_for(wait);
    }
    if (!changed) {
      upstream_session->cancel(*call);
      outcome.failure = UpstreamFailure::timeout;
      if (!head_sent) {
        deadline_passed = call_timeout.has_value();
        co_return failed_before_response(UpstreamFailure::timeout);
      }
      session.reset(stream, NGHTTP2_CANCEL);
      connection.flush();
      co_return outcome;
    }
  }
}

}  // namespace sluice::http::h2
