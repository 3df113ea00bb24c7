#include "proxy/http/session.hpp"

#include <array>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <vector>

#include "proxy/http/beast_http.hpp"
#include "proxy/http/exchange.hpp"
#include "proxy/http/message_read.hpp"
#include "proxy/http/relay.hpp"
#include "proxy/http/responses.hpp"
#include "proxy/io/socket_io.hpp"

namespace sluice::http {
namespace {

pipeline::IpAddress address_of(const tcp::endpoint& endpoint) {
  pipeline::IpAddress address;
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
io::Awaitable<bool> answer(io::Stream& client, const OwnResponse& response,
                           limiter::Duration timeout) {
  const beast::error_code ec = co_await send(client, response.buffers(), timeout);
  co_return !ec && response.keep_alive;
}

/// The answer to a request whose head could not be read: 431 for a head too large, 414 when
/// its request line alone is (RFC 9112 §3), else what the parser's checks say (400, or 501).
http::status refusal_for(const RequestParser& parser, const beast::error_code& ec) noexcept {
  if (ec == http::error::header_limit) {
    return parser.start_line_done() ? http::status::request_header_fields_too_large
                                    : http::status::uri_too_long;
  }
  return parser.refusal();
}

/// Counts a connection while it is open, and gives its slot (taken by the accept loop) back
/// when it closes.
struct ConnectionCount {
  ConnectionCount(std::atomic<std::size_t>& count, std::atomic<std::size_t>& slots)
      : count_(&count), slots_(&slots) {
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
  IdleRegistration(IdleConnections& idle, io::Stream& client, const bool& waiting)
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
  io::Stream* client_;
};

telemetry::MetricDecision metric_decision(pipeline::Outcome outcome) noexcept {
  switch (outcome) {
    case pipeline::Outcome::allowed:
      return telemetry::MetricDecision::allowed;
    case pipeline::Outcome::delayed:
      return telemetry::MetricDecision::delayed;
    case pipeline::Outcome::limited:
      return telemetry::MetricDecision::limited;
    case pipeline::Outcome::denied:
      return telemetry::MetricDecision::denied;
    case pipeline::Outcome::no_route:
      return telemetry::MetricDecision::no_route;
  }
  return telemetry::MetricDecision::no_route;
}

telemetry::UpstreamErrorKind error_kind(UpstreamFailure failure) noexcept {
  return failure == UpstreamFailure::connect   ? telemetry::UpstreamErrorKind::connect
         : failure == UpstreamFailure::timeout ? telemetry::UpstreamErrorKind::timeout
                                               : telemetry::UpstreamErrorKind::broken;
}

/// Counts a finished request in its loop's metrics, and logs it. `relayed`: null when the proxy
/// answered it itself.
void account(const LoopContext& loop, const Exchange& exchange, unsigned status,
             const RelayOutcome* relayed) {
  const auto total = std::chrono::steady_clock::now() - exchange.started;
  const pipeline::Decision& decision = exchange.decision;
  const live::Generation& generation = exchange.generation;
  telemetry::RouteCounters& counters = generation.counters_for(decision.route, loop.index);
  counters.count(metric_decision(decision.outcome));
  for (const pipeline::LimiterReport& report : decision.applied()) {
    if (report.limiter->shadow && !report.verdict.admitted) {
      counters.count(telemetry::MetricDecision::shadow_limited);
      break;
    }
  }
  counters.observe(total);
  if (relayed && relayed->failure != UpstreamFailure::none) {
    generation.upstream_counters_for(*decision.route, loop.index)
        .count(error_kind(relayed->failure));
  }
  const config::ProxyConfig& config = exchange.config();
  if (!config.log.access) {
    return;
  }
  std::array<char, 48> client;  // the longest IPv6 text fits
  const std::string text = decision.client.to_string();
  const std::size_t length = std::min(text.size(), client.size());
  std::copy_n(text.begin(), length, client.begin());
  const std::uint64_t key = decision.report_count > 0 ? decision.reports[0].key : 0;
  loop.proxy.access_log.write(
      config.log.format,
      telemetry::AccessRecord{.client = std::string_view(client.data(), length),
                              .method = exchange.request.method_string(),
                              .target = exchange.request.target(),
                              .secret_query = generation.secret_query,
                              .route = decision.route ? std::string_view(decision.route->name) : "",
                              .decision = metric_decision(decision.outcome),
                              .status = status,
                              .key_hash = key,
                              .upstream = relayed ? relayed->upstream_time : limiter::Duration{},
                              .total = total});
}

}  // namespace

io::Awaitable<void> serve_client(io::Socket socket, LoopContext& loop) {
  ProxyState& proxy = loop.proxy;
  const ConnectionCount counted(proxy.connections, proxy.connection_slots);
  beast::error_code ignored;
  const tcp::endpoint peer_endpoint = socket.remote_endpoint(ignored);
  socket.non_blocking(true, ignored);  // see socket_io.hpp
  ClientConnection client(std::move(socket), address_of(peer_endpoint),
                          peer_endpoint.address().to_string());
  io::Stream& stream = client.stream;
  bool waiting = false;
  const IdleRegistration registered(loop.idle, stream, waiting);
  // The generation this connection serves with; replaced between requests after a reload.
  std::shared_ptr<const live::Generation> generation = loop.generations.get();

  for (bool first = true;; first = false) {
    if (const auto& live = loop.generations.get(); live.get() != generation.get()) {
      generation = live;
    }
    const config::Timeouts& timeouts = generation->config->timeouts;
    client.request_head.trim();  // the last request is over; an idle connection keeps little
    RequestParser parser(client.request_head);
    parser.header_limit(kMaxHeaderBytes);
    parser.body_limit(boost::none);  // bodies are streamed, never held whole
    if (proxy.draining.load(std::memory_order_relaxed)) {
      break;
    }
    stream.expires_after(first ? timeouts.header : timeouts.idle);
    waiting = true;  // nothing in flight: a drain may close it
    bool header_deadline = first;
    beast::error_code ec;
    for (MessageRead read(client.buffer, parser, MessageRead<true>::Until::header_done);
         read.wants_bytes(ec);) {
      if (!header_deadline && client.buffer.size() > 0) {
        // Part of a new head is in and the rest is awaited: from its first byte a head gets
        // timeouts.header, on a kept-alive connection as on a new one (else a slow client
        // could trickle each later head for the idle timeout). A head that came whole, the
        // usual case, never moves the deadline.
        stream.expires_after(timeouts.header);
        header_deadline = true;
      }
      auto [error, n] = co_await stream.async_read_some(read.room(), io::use_nothrow);
      read.received(n, error, ec);
    }
    waiting = false;
    if (ec) {  // (checked first: comparing codes of other categories is not free)
      if (ec == http::error::end_of_stream || ec == beast::error::timeout ||
          ec == net::error::connection_reset || ec == net::error::eof ||
          ec == net::error::operation_aborted) {
        break;  // the client is done, or went quiet
      }
      // Too large: 431 (414); malformed: 400 (501). The connection cannot be trusted to go on.
      problem_response(client.own, refusal_for(parser, ec), 11, false);
      co_await answer(stream, client.own, timeouts.idle);
      break;
    }
    Exchange exchange{.generation = *generation,
                      .request = parser,
                      .decision = {},
                      .keep_alive = false,
                      .started = std::chrono::steady_clock::now()};
    pipeline::Decision& decision = exchange.decision;
    const pipeline::RequestView view{.method = parser.method_string(),
                                     .target = parser.target(),
                                     .host = client.request_head.value_of(http::field::host),
                                     .headers = client.request_head.headers(),
                                     .peer = client.peer};
    pipeline::Charges charges;
    const limiter::TimePoint now = proxy.clock.now();
    if (generation->pipeline.prepare(view, now, std::nullopt, decision, charges)) {
      pipeline::ChargeResult charged;
      if (!proxy.store->charge_now(loop.index, decision, charges, now, charged)) {
        charged = co_await proxy.store->charge(loop.index, decision, charges, now);
      }
      generation->pipeline.conclude(decision, charges, charged, now);
    }
    // A body left unread would be taken for the next request: only keep alive without one.
    exchange.keep_alive = parser.keep_alive() && !proxy.draining.load(std::memory_order_relaxed);
    if (decision.hold > limiter::Duration::zero()) {
      // Delay mode: a timer, never a blocked thread. Held is held, whoever answers: a route
      // that responds itself waits as long as one that forwards.
      io::Timer hold(co_await net::this_coro::executor, decision.hold);
      co_await hold.async_wait(io::use_nothrow);
    }
    const bool forward = (decision.outcome == pipeline::Outcome::allowed ||
                          decision.outcome == pipeline::Outcome::delayed) &&
                         !decision.route->respond;
    if (!forward) {
      exchange.keep_alive = exchange.keep_alive && parser.is_done();
      own_response(client.own, decision, parser.version(), exchange.keep_alive,
                   exchange.config().limits_headers);
      // The refusal path is hot: a send that completes at once allocates no coroutine frame.
      const io::SendStart start = send_now(stream, client.own.buffers());
      beast::error_code send_error = start.error;
      if (!start.finished) {
        send_error = co_await send_rest(stream, client.own.buffers(), start.sent, timeouts.idle);
      }
      const bool again = !send_error && client.own.keep_alive;
      proxy.store->release(loop.index, decision);
      account(loop, exchange, decision.status, nullptr);
      if (!again) {
        break;
      }
      continue;
    }
    const RelayOutcome outcome = co_await relay(client, exchange, loop);
    // The permits go back once the response is over, or the client has gone.
    proxy.store->release(loop.index, decision);
    account(loop, exchange, outcome.status, &outcome);
    if (!outcome.keep_alive) {
      break;
    }
  }
  stream.socket().shutdown(io::Socket::shutdown_send, ignored);
}

}  // namespace sluice::http
