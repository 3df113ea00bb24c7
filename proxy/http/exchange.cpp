#include "proxy/http/exchange.hpp"

#include <optional>

#include "proxy/http/accounting.hpp"
#include "proxy/live/top_keys.hpp"

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

void Exchange::charged_in_head(unsigned status, limiter::Permits head_cost) const {
  const pipeline::ResponseSaid said{.status = status, .cost = head_cost};
  for (std::size_t i = 0; i < decision.later_count; ++i) {
    const pipeline::LaterCharge& later = decision.later[i];
    const limiter::Permits owed = pipeline::owed_for(*decision.route, later, said);
    for (pipeline::LimiterReport& report :
         std::span(decision.reports.data(), decision.report_count)) {
      if (report.limiter == later.config) {
        std::uint64_t& remaining = report.status.remaining;
        remaining = owed >= later.reserved
                        ? remaining - std::min<std::uint64_t>(remaining, owed - later.reserved)
                        : remaining + (later.reserved - owed);
      }
    }
  }
}

namespace {

/// Starts sending the answer in `downstream.own()` (to HEAD, its head alone); true when it is
/// all out, else send_own() finishes it. Not a coroutine: the hot refusal path needs no frame.
bool start_answer(Downstream& downstream, Exchange& exchange) {
  downstream.own().to_head = exchange.request.method == http::verb::head;
  return downstream.send_own_now(exchange);
}

telemetry::CostReading reading_of(const cost::Reading& reading) noexcept {
  switch (reading.result) {
    case cost::Reading::Result::reported:
      return telemetry::CostReading::reported;
    case cost::Reading::Result::missing:
      return telemetry::CostReading::missing;
    case cost::Reading::Result::invalid:
      return telemetry::CostReading::invalid;
  }
  return telemetry::CostReading::missing;
}

/// Settles the charges that waited for the response (SPEC §9) with what it said, `status`
/// being what the client got (0: nothing), and counts them. A request that never went upstream
/// (the client left while it was held) cost nothing.
void settle_later_charges(LoopContext& loop, Exchange& exchange, unsigned status,
                          bool forwarded = true) {
  const pipeline::Decision& decision = exchange.decision;
  if (decision.later_count == 0) {
    return;
  }
  const cost::Reading reading = exchange.cost != nullptr ? exchange.cost->end() : cost::Reading{};
  const pipeline::ResponseSaid said{
      .status = status,
      .cost = !forwarded ? std::optional<limiter::Permits>(0)
              : reading.result == cost::Reading::Result::reported
                  ? std::optional(static_cast<limiter::Permits>(reading.cost))
                  : std::nullopt};
  loop.proxy.store->settle(loop.index, decision, said, loop.proxy.clock.now());
  exchange.cost_problem = reading.why;
  for (std::size_t i = 0; i < decision.later_count; ++i) {
    const pipeline::LaterCharge& later = decision.later[i];
    const limiter::Permits owed = pipeline::owed_for(*decision.route, later, said);
    telemetry::CostCounters& counters =
        exchange.generation.cost_counters_for(*later.config, loop.index);
    counters.charged.add(owed);
    if (later.config->cost_from_response) {
      counters.read(reading_of(reading));
      exchange.charged_cost = owed;
    } else if (!exchange.charged_cost) {
      exchange.charged_cost = owed;
    }
  }
}

/// A forward-auth check whose fields describe no request: 400, naming them; counted and logged
/// as a request of no route.
io::Awaitable<void> answer_bad_check(Downstream& downstream, Exchange& exchange,
                                     LoopContext& loop) {
  bad_request(downstream.own(), exchange.request.version,
              exchange.keep_alive && !downstream.body_unread(), exchange.described->problem);
  if (!start_answer(downstream, exchange)) {
    co_await downstream.send_own(exchange);
  }
  account(loop, exchange, 400, nullptr);
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
  pipeline::RequestView view = downstream.request_view();
  if (const DescribedRequest* described = exchange.described) {
    if (!described->problem.empty()) {
      co_await answer_bad_check(downstream, exchange, loop);
      co_return;
    }
    view.method = described->method;
    view.target = described->target;
    view.host = described->host;
  }
  const limiter::TimePoint now = proxy.clock.now();
  {
    const ChargeWorkPool::Lease work = loop.charge_work.borrow();  // given back once decided
    pipeline::Charges& charges = work->charges;
    charges = {};  // prepare() adds to them
    if (pipeline.prepare(view, now, std::nullopt, decision, charges)) {
      pipeline::ChargeResult& charged = work->charged;
      charged = {};
      // The memory store, and a shared one that needs no round trip, answer without a wait.
      if (!store.charge_now(loop.index, decision, charges, now, charged)) {
        co_await store.charge(loop.index, decision, charges, now, charged);
      }
      pipeline.conclude(decision, charges, charged, now);
      live::count_top_keys(exchange.generation, loop.index, decision, view, now);
    }
  }
  exchange.cost = nullptr;
  exchange.charged_cost = std::nullopt;
  exchange.cost_problem = {};
  if (decision.later_count != 0 && exchange.forwards()) {
    exchange.meter = exchange.generation.meter_spec_for(*decision.route);
    if (exchange.meter != nullptr) {
      exchange.cost = &downstream.response_cost();
    }
  }
  if (decision.hold > limiter::Duration::zero()) {
    // Delay mode: a timer, never a blocked thread. Held is held, whoever answers: a route that
    // responds itself waits as long as one that forwards.
    io::Timer hold(co_await net::this_coro::executor, decision.hold);
    co_await hold.async_wait(io::use_nothrow);
  }
  if (downstream.gone()) {
    settle_later_charges(loop, exchange, 0, false);
    store.release(loop.index, decision);  // reset while it was decided or held
    co_return;
  }
  if (!exchange.forwards() || exchange.described != nullptr) {
    const bool keep_alive = exchange.keep_alive && !downstream.body_unread();
    unsigned status = decision.status;
    if (exchange.described != nullptr && exchange.admits_described()) {
      admitted_response(downstream.own(), decision, request.version, keep_alive, limits_headers);
      status = 200;
    } else {
      own_response(downstream.own(), decision, request.version, keep_alive, limits_headers);
    }
    if (!start_answer(downstream, exchange)) {
      co_await downstream.send_own(exchange);
    }
    settle_later_charges(loop, exchange, status);
    store.release(loop.index, decision);
    account(loop, exchange, status, nullptr);
    co_return;
  }
  RelayOutcome outcome;
  if (exchange.has_upstream()) {
    outcome = co_await downstream.relay(exchange);
  } else {
    outcome = failed_before_response(UpstreamFailure::connect);  // a decision service's config
  }
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
  // Once the response is over, or the client has gone, the charges that waited for it are
  // settled, then the permits go back: a request that finds a concurrency permit free finds
  // the charge of the one that held it (with the memory store; a shared one settles in the
  // background).
  settle_later_charges(loop, exchange, outcome.status);
  store.release(loop.index, decision);
  account(loop, exchange, outcome.status, &outcome);
  exchange.keep_alive = outcome.keep_alive;
}

}  // namespace sluice::http
