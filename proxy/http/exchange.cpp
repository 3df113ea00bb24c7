#include "proxy/http/exchange.hpp"

#include <optional>

#include "proxy/http/accounting.hpp"

namespace sluice::http {

std::string_view name_of(UpstreamFailure failure) noexcept {
  switch (failure) {
    case UpstreamFailure::none:
      return "none";
    case UpstreamFailure::connect:
      return "connect";
    case UpstreamFailure::timeout:
      return "timeout";
    case UpstreamFailure::broken:
      return "broken";
  }
  return "unknown";
}

RelayOutcome failed_before_response(UpstreamFailure failure) noexcept {
  return RelayOutcome{.failure = failure,
                      .answer = failure == UpstreamFailure::timeout ? http::status::gateway_timeout
                                                                    : http::status::bad_gateway};
}

namespace {

/// Starts sending the answer in `downstream.own()` (to HEAD, its head alone); true when it is
/// all out, else send_own() finishes it. Not a coroutine: the hot refusal path needs no frame.
bool start_answer(Downstream& downstream, Exchange& exchange) {
  downstream.own().to_head = exchange.request.method == http::verb::head;
  return downstream.send_own_now(exchange);
}

}  // namespace

io::Awaitable<void> serve_exchange(Downstream& downstream, Exchange& exchange, LoopContext& loop) {
  ProxyState& proxy = loop.proxy;
  store::Store& store = *proxy.store;
  pipeline::Decision& decision = exchange.decision;
  pipeline::Pipeline& pipeline = exchange.generation.pipeline;
  const RequestHead& request = exchange.request;
  const config::LimitsHeaders limits_headers = exchange.config().limits_headers;
  decision = {};
  exchange.charges = {};  // prepare() adds to them
  const limiter::TimePoint now = proxy.clock.now();
  if (pipeline.prepare(downstream.request_view(), now, std::nullopt, decision, exchange.charges)) {
    exchange.charged = {};
    // The memory store, and a shared one that needs no round trip, answer without a wait.
    if (!store.charge_now(loop.index, decision, exchange.charges, now, exchange.charged)) {
      exchange.charged = co_await store.charge(loop.index, decision, exchange.charges, now);
    }
    pipeline.conclude(decision, exchange.charges, exchange.charged, now);
  }
  if (decision.hold > limiter::Duration::zero()) {
    // Delay mode: a timer, never a blocked thread. Held is held, whoever answers: a route that
    // responds itself waits as long as one that forwards.
    io::Timer hold(co_await net::this_coro::executor, decision.hold);
    co_await hold.async_wait(io::use_nothrow);
  }
  if (downstream.gone()) {
    store.release(loop.index, decision);  // reset while it was decided or held
    co_return;
  }
  if (!exchange.forwards()) {
    own_response(downstream.own(), decision, request.version,
                 exchange.keep_alive && !downstream.body_unread(), limits_headers);
    if (!start_answer(downstream, exchange)) {
      co_await downstream.send_own(exchange);
    }
    store.release(loop.index, decision);
    account(loop, exchange, decision.status, nullptr);
    co_return;
  }
  RelayOutcome outcome = co_await downstream.relay(exchange);
  if (outcome.answer != http::status::unknown) {
    // Whatever the client sent after its head may still be on its way: a connection closes.
    problem_response(downstream.own(), outcome.answer, request.version, false, &decision,
                     limits_headers);
    if (!start_answer(downstream, exchange)) {
      co_await downstream.send_own(exchange);
    }
    outcome.status = static_cast<unsigned>(outcome.answer);
    outcome.keep_alive = false;
  }
  // The permits go back once the response is over, or the client has gone.
  store.release(loop.index, decision);
  account(loop, exchange, outcome.status, &outcome);
  exchange.keep_alive = outcome.keep_alive;
}

}  // namespace sluice::http
