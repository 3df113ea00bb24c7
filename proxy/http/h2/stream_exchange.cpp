// What one HTTP/2 stream is: its request as an HTTP/1.1 head, through the pipeline like any
// request (serve_exchange), then the proxy's own answer or the upstream's.
#include <chrono>
#include <cstring>
#include <optional>

#include "proxy/http/h2/connection.hpp"
#include "proxy/http/h2/stream_answers.hpp"
#include "proxy/http/h2/stream_to_http1.hpp"
#include "proxy/http/h2/stream_to_http2.hpp"
#include "proxy/http/h2/translate.hpp"
#include "proxy/http/responses.hpp"

namespace sluice::http::h2 {
namespace {

/// Writes the HTTP/1.1 head of the stream's request into `state.buffer` and parses it as the
/// HTTP/1 session parses one: the same checks, and a RequestParser for the rest of the proxy.
bool parse_request(const RequestStream& stream, RequestState& state, beast::error_code& ec) {
  HeadText& text = state.relay_head;
  text.clear();
  write_request_head(stream, text);
  state.buffer.clear();
  const net::mutable_buffer room = state.buffer.prepare(text.size());
  std::memcpy(room.data(), text.data(), text.size());
  state.buffer.commit(text.size());
  state.request_head.trim();
  RequestParser& parser = state.parser.emplace(state.request_head);
  parser.header_limit(kMaxHeaderBytes);
  parser.body_limit(boost::none);
  parser.put(state.buffer.data(), ec);
  return !ec && parser.is_header_done();
}

/// The client side of an exchange on an HTTP/2 stream: the request its fields made, the
/// answer on the stream (the gRPC way for a gRPC call), the relay to either kind of upstream.
class StreamDownstream final : public Downstream {
 public:
  StreamDownstream(const std::shared_ptr<Connection>& connection,
                   const std::shared_ptr<RequestStream>& stream, RequestState& state)
      : connection_(connection),
        stream_(stream),
        state_(state),
        grpc_(is_grpc(state.request_head)) {}

  pipeline::RequestView request_view() const noexcept override {
    return http::request_view(state_, connection_->client());
  }
  bool gone() const noexcept override { return stream_->closed; }

  OwnResponse& own() noexcept override { return state_.own; }
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

 private:
  const std::shared_ptr<Connection>& connection_;
  const std::shared_ptr<RequestStream>& stream_;
  RequestState& state_;
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
  beast::error_code ec;
  if (s.too_large || !parse_request(s, state, ec)) {
    problem_response(state.own,
                     s.too_large ? http::status::request_header_fields_too_large
                                 : (ec ? state.parser->refusal() : http::status::bad_request),
                     kHttp11, true);
    state.own.to_head = s.method == "HEAD";
    co_await answer_own(*connection, s, state, false, timeouts.idle);
    connection->stream_done();
    co_return;
  }
  StreamDownstream downstream(connection, stream, state);
  Exchange exchange{.generation = *generation,
                    .request = *state.parser,
                    .decision = state.decision,
                    .charges = state.charges,
                    .charged = state.charged,
                    .keep_alive = true,
                    .started = std::chrono::steady_clock::now()};
  co_await serve_exchange(downstream, exchange, loop);
  connection->stream_done();
}

}  // namespace sluice::http::h2
