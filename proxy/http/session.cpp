#include "proxy/http/session.hpp"

#include <array>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <vector>

#include "proxy/http/beast_http.hpp"
#include "proxy/http/message_read.hpp"
#include "proxy/http/relay.hpp"
#include "proxy/http/responses.hpp"
#include "proxy/io/socket_io.hpp"

namespace sluice::proxy {
namespace {

IpAddress address_of(const tcp::endpoint& endpoint) {
  IpAddress address;
  const net::ip::address ip = endpoint.address();
  if (ip.is_v4()) {
    const auto bytes = ip.to_v4().to_bytes();
    std::copy(bytes.begin(), bytes.end(), address.bytes.begin());
    address.ipv4 = true;
  } else if (ip.to_v6().is_v4_mapped()) {
    const auto bytes = net::ip::make_address_v4(net::ip::v4_mapped, ip.to_v6()).to_bytes();
    std::copy(bytes.begin(), bytes.end(), address.bytes.begin());
    address.ipv4 = true;
  } else {
    const auto bytes = ip.to_v6().to_bytes();
    std::copy(bytes.begin(), bytes.end(), address.bytes.begin());
    address.ipv4 = false;
  }
  return address;
}

/// Answers with `response` and says whether the connection may serve another request.
Awaitable<bool> answer(Stream& client, const OwnResponse& response, limiter::Duration timeout) {
  const beast::error_code ec = co_await send(client, response.buffers(), timeout);
  co_return !ec && response.keep_alive;
}

/// Counts a connection while it is open, and gives its slot (taken by the accept loop) back
/// when it closes.
struct ConnectionCount {
  ConnectionCount(std::atomic<std::size_t>* count, std::atomic<std::size_t>* slots)
      : count_(count), slots_(slots) {
    count_->fetch_add(1, std::memory_order_relaxed);
  }
  ConnectionCount(const ConnectionCount&) = delete;
  ConnectionCount& operator=(const ConnectionCount&) = delete;
  ConnectionCount(ConnectionCount&&) = delete;
  ConnectionCount& operator=(ConnectionCount&&) = delete;
  ~ConnectionCount() {
    count_->fetch_sub(1, std::memory_order_relaxed);
    slots_->fetch_sub(1, std::memory_order_relaxed);
  }
  std::atomic<std::size_t>* count_;
  std::atomic<std::size_t>* slots_;
};

/// Lists a connection among its loop's open ones while it is open.
class IdleRegistration {
 public:
  IdleRegistration(IdleConnections& idle, Stream& client, const bool& waiting)
      : idle_(idle), client_(&client) {
    idle_.open.emplace(client_, &waiting);
  }
  IdleRegistration(const IdleRegistration&) = delete;
  IdleRegistration& operator=(const IdleRegistration&) = delete;
  IdleRegistration(IdleRegistration&&) = delete;
  IdleRegistration& operator=(IdleRegistration&&) = delete;
  ~IdleRegistration() { idle_.open.erase(client_); }

 private:
  IdleConnections& idle_;
  Stream* client_;
};

MetricDecision metric_decision(Outcome outcome) noexcept {
  switch (outcome) {
    case Outcome::allowed:
      return MetricDecision::allowed;
    case Outcome::delayed:
      return MetricDecision::delayed;
    case Outcome::limited:
      return MetricDecision::limited;
    case Outcome::denied:
      return MetricDecision::denied;
    case Outcome::no_route:
      return MetricDecision::no_route;
  }
  return MetricDecision::no_route;
}

UpstreamErrorKind error_kind(UpstreamFailure failure) noexcept {
  return failure == UpstreamFailure::connect   ? UpstreamErrorKind::connect
         : failure == UpstreamFailure::timeout ? UpstreamErrorKind::timeout
                                               : UpstreamErrorKind::broken;
}

/// Counts a finished request in its loop's metrics, and logs it.
void account(const SessionContext& context, const Generation& generation, const Decision& decision,
             const RequestParser& request, unsigned status, const RelayOutcome* relayed,
             std::chrono::steady_clock::time_point started) {
  const auto total = std::chrono::steady_clock::now() - started;
  RouteCounters& counters = generation.counters_for(decision.route, context.loop);
  counters.count(metric_decision(decision.outcome));
  for (const LimiterReport& report : decision.applied()) {
    if (report.limiter->shadow && !report.verdict.admitted) {
      counters.count(MetricDecision::shadow_limited);
      break;
    }
  }
  counters.observe(total);
  if (relayed && relayed->failure != UpstreamFailure::none) {
    generation.upstream_counters_for(*decision.route, context.loop)
        .count(error_kind(relayed->failure));
  }
  const config::ProxyConfig& config = *generation.config;
  if (!config.log.access) {
    return;
  }
  std::array<char, 48> client;  // the longest IPv6 text fits
  const std::string text = decision.client.to_string();
  const std::size_t length = std::min(text.size(), client.size());
  std::copy_n(text.begin(), length, client.begin());
  const std::uint64_t key = decision.report_count > 0 ? decision.reports[0].key : 0;
  context.access_log->write(
      config.log.format,
      AccessRecord{.client = std::string_view(client.data(), length),
                   .method = request.method_string(),
                   .target = request.target(),
                   .route = decision.route ? std::string_view(decision.route->name) : "",
                   .decision = metric_decision(decision.outcome),
                   .status = status,
                   .key_hash = key,
                   .upstream = relayed ? relayed->upstream_time : limiter::Duration{},
                   .total = total});
}

}  // namespace

Awaitable<void> serve_client(Socket socket, SessionContext context) {
  const ConnectionCount counted(context.connections, context.slots);
  beast::error_code ignored;
  const tcp::endpoint peer_endpoint = socket.remote_endpoint(ignored);
  const IpAddress peer = address_of(peer_endpoint);
  const std::string peer_text = peer_endpoint.address().to_string();  // for X-Forwarded-For
  socket.non_blocking(true, ignored);                                 // see socket_io.hpp
  Stream client(std::move(socket));
  bool waiting = false;
  const IdleRegistration registered(*context.idle, client, waiting);
  beast::flat_buffer buffer(kMaxHeaderBytes);
  HeadFields request_head;  // capacity reused from one request to the next
  // The generation this connection serves with; replaced between requests after a reload.
  std::shared_ptr<const Generation> generation = context.generations->get();
  OwnResponse own;      // an answer the proxy gives itself
  HeadText relay_head;  // the heads of a relayed request and its response

  for (bool first = true;; first = false) {
    if (const auto& live = context.generations->get(); live.get() != generation.get()) {
      generation = live;
    }
    const config::ProxyConfig& config = *generation->config;
    const config::Timeouts& timeouts = config.timeouts;
    request_head.trim();  // the last request is over; an idle connection keeps little
    RequestParser parser(request_head);
    parser.header_limit(kMaxHeaderBytes);
    parser.body_limit(boost::none);  // bodies are streamed, never held whole
    if (context.draining->load(std::memory_order_relaxed)) {
      break;
    }
    client.expires_after(first ? timeouts.header : timeouts.idle);
    waiting = true;  // nothing in flight: a drain may close it
    beast::error_code ec;
    for (MessageRead read(buffer, parser, MessageRead<true>::Until::header_done);
         read.wants_bytes(ec);) {
      auto [error, n] = co_await client.async_read_some(read.room(), use_nothrow);
      read.received(n, error, ec);
    }
    waiting = false;
    if (ec) {  // (checked first: comparing codes of other categories is not free)
      if (ec == http::error::end_of_stream || ec == beast::error::timeout ||
          ec == net::error::connection_reset || ec == net::error::eof ||
          ec == net::error::operation_aborted) {
        break;  // the client is done, or went quiet
      }
      // Too large: 431; malformed: 400. The connection cannot be trusted to continue.
      problem_response(own,
                       ec == http::error::header_limit
                           ? http::status::request_header_fields_too_large
                           : http::status::bad_request,
                       11, false);
      co_await answer(client, own, timeouts.idle);
      break;
    }
    const auto started = std::chrono::steady_clock::now();
    const RequestView view{.method = parser.method_string(),
                           .target = parser.target(),
                           .host = request_head.value_of(http::field::host),
                           .headers = request_head.headers(),
                           .peer = peer};
    Decision decision;
    Charges charges;
    const limiter::TimePoint now = context.clock->now();
    if (generation->pipeline.prepare(view, now, std::nullopt, decision, charges)) {
      ChargeResult charged;
      if (!context.store->charge_now(context.loop, decision, charges, now, charged)) {
        charged = co_await context.store->charge(context.loop, decision, charges, now);
      }
      generation->pipeline.conclude(decision, charges, charged, now);
    }
    // A body left unread would be taken for the next request: only keep alive without one.
    bool keep_alive = parser.keep_alive() && !context.draining->load(std::memory_order_relaxed);
    const bool forward =
        (decision.outcome == Outcome::allowed || decision.outcome == Outcome::delayed) &&
        !decision.route->respond;
    if (!forward) {
      keep_alive = keep_alive && parser.is_done();
      own_response(own, decision, parser.version(), keep_alive, config.limits_headers);
      // The refusal path is hot: a send that completes at once allocates no coroutine frame.
      const SendStart start = send_now(client, own.buffers());
      beast::error_code send_error = start.error;
      if (!start.finished) {
        send_error = co_await send_rest(client, own.buffers(), start.sent, timeouts.idle);
      }
      const bool again = !send_error && own.keep_alive;
      context.store->release(context.loop, decision);
      account(context, *generation, decision, parser, decision.status, nullptr, started);
      if (!again) {
        break;
      }
      continue;
    }
    if (decision.hold > limiter::Duration::zero()) {
      // Delay mode: a timer, never a blocked thread.
      Timer hold(co_await net::this_coro::executor, decision.hold);
      co_await hold.async_wait(use_nothrow);
    }
    const config::Upstream& upstream =
        decision.route->upstream ? *decision.route->upstream : *config.upstream;
    const RelayOutcome outcome = co_await relay(client, buffer, parser, peer_text, upstream,
                                                decision, config, context, keep_alive, relay_head);
    // The permits go back once the response is over, or the client has gone.
    context.store->release(context.loop, decision);
    account(context, *generation, decision, parser, outcome.status, &outcome, started);
    if (!outcome.keep_alive) {
      break;
    }
  }
  client.socket().shutdown(Socket::shutdown_send, ignored);
}

}  // namespace sluice::proxy
