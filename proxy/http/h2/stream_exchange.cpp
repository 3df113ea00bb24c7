// What one HTTP/2 stream is: its request, read from the fields nghttp2 decoded, through the
// pipeline like any request (serve_exchange), then the proxy's own answer or the upstream's.
#include <chrono>
#include <optional>

#include "proxy/http/h2/connection.hpp"
#include "proxy/http/h2/request_head.hpp"
#include "proxy/http/h2/rls_call.hpp"
#include "proxy/http/h2/stream_answers.hpp"
#include "proxy/http/h2/stream_to_http1.hpp"
#include "proxy/http/h2/stream_to_http2.hpp"
#include "proxy/http/responses.hpp"

namespace sluice::http::h2 {
namespace {

/// The client side of an exchange on an HTTP/2 stream: the request its fields made, the
/// answer on the stream (the gRPC way for a gRPC call), the relay to either kind of upstream.
class StreamDownstream final : public Downstream {
 public:
  StreamDownstream(const std::shared_ptr<Connection>& connection,
                   const std::shared_ptr<RequestStream>& stream, RequestState& state,
                   const RequestHead& request)
      : connection_(connection),
        stream_(stream),
        state_(state),
        request_(request),
        grpc_(is_grpc(state.request_head)) {}

  pipeline::RequestView request_view() const noexcept override {
    return http::request_view(request_, connection_->client());
  }
  bool gone() const noexcept override { return stream_->closed; }

  OwnResponse& own() override { return state_.own(); }
  bool send_own_now(Exchange&) override {
    return false;  // the stream is answered once its frames went: always awaited
  }
  io::Awaitable<void> send_own(Exchange& exchange) override {
    return answer_own(
        *connection_, *stream_, state_, grpc_, exchange.config().timeouts.idle,
        deadline_passed_ ? std::optional(GrpcStatus::deadline_exceeded) : std::nullopt);
  }

  io::Awaitable<RelayOutcome> relay(Exchange& exchange) override {
    return exchange.upstream().http2
               ? relay_to_http2(*connection_, stream_, state_, exchange, grpc_, deadline_passed_)
               : relay_to_http1(*connection_, *stream_, state_, exchange);
  }
  ResponseCost& response_cost() override { return state_.response_cost(); }

 private:
  const std::shared_ptr<Connection>& connection_;
  const std::shared_ptr<RequestStream>& stream_;
  RequestState& state_;
  const RequestHead& request_;
  const bool grpc_;
  bool deadline_passed_ = false;  ///< The gRPC call's own deadline ran out upstream.
};

}  // namespace

io::Awaitable<void> serve_stream(std::shared_ptr<Connection> connection,
                                 std::shared_ptr<RequestStream> stream) {
  LoopContext& loop = connection->loop();
  RequestStream& s = *stream;
  const std::shared_ptr<const live::Generation> generation = connection->generation();
  const config::Timeouts& timeouts = generation->config->timeouts;
  const RequestStatePool::Lease lease = loop.request_states.borrow();
  RequestState& state = *lease;
  RequestHead request;
  const http::status refusal = s.too_large ? http::status::request_header_fields_too_large
                                           : read_request_head(s, state.request_head, request);
  if (refusal != http::status::ok) {
    problem_response(state.own(), refusal, kHttp11, true);
    state.own().to_head = s.method == "HEAD";
    co_await answer_own(*connection, s, state, false, timeouts.idle);
    connection->stream_done();
    co_return;
  }
  if (connection->client().decides && s.path == kShouldRateLimitPath) {
    co_await serve_rls_call(connection, stream, state);  // Envoy's rate-limit service
    connection->stream_done();
    co_return;
  }
  StreamDownstream downstream(connection, stream, state, request);
  Exchange exchange{.generation = *generation,
                    .request = request,
                    .decision = state.decision,
                    .keep_alive = true,
                    .started = std::chrono::steady_clock::now()};
  DescribedRequest described;
  if (connection->client().decides) {
    described = describe(request);
    exchange.described = &described;
  }
  co_await serve_exchange(downstream, exchange, loop);
  connection->stream_done();
}

}  // namespace sluice::http::h2
