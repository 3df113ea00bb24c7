#include "proxy/http/http1_connection.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <memory>
#include <utility>

#include "proxy/http/beast_http.hpp"
#include "proxy/http/exchange.hpp"
#include "proxy/http/message_read.hpp"
#include "proxy/http/open_connection.hpp"
#include "proxy/http/relay.hpp"
#include "proxy/http/request_state.hpp"
#include "proxy/http/responses.hpp"
#include "proxy/io/socket_io.hpp"

namespace sluice::http {
namespace {

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

/// The client side of an exchange on an HTTP/1.1 connection: the request its parser read, the
/// answer written to the connection, the relay over it.
class Http1Downstream final : public Downstream {
 public:
  Http1Downstream(ClientConnection& client, const RequestHead& request, LoopContext& loop)
      : client_(client), request_(request), loop_(loop) {}

  pipeline::RequestView request_view() const noexcept override {
    return http::request_view(request_, client_);
  }
  bool body_unread() const noexcept override { return !client_.state->parser->is_done(); }

  OwnResponse& own() override { return client_.state->own(); }
  bool send_own_now(Exchange& exchange) override {
    const OwnResponse& own = client_.state->own();
    // The refusal path is hot: a send that completes at once needs no coroutine frame.
    sending_ = send_now(client_.stream, own.buffers());
    if (!sending_.finished) {
      return false;
    }
    exchange.keep_alive = !sending_.error && own.keep_alive;
    return true;
  }
  io::Awaitable<void> send_own(Exchange& exchange) override {
    const OwnResponse& own = client_.state->own();
    const beast::error_code error = co_await send_rest(client_.stream, own.buffers(), sending_.sent,
                                                       exchange.config().timeouts.idle);
    exchange.keep_alive = !error && own.keep_alive;
  }

  io::Awaitable<RelayOutcome> relay(Exchange& exchange) override {
    return http::relay(client_, exchange, loop_);
  }
  ResponseCost& response_cost() override { return client_.state->response_cost(); }

 private:
  ClientConnection& client_;
  const RequestHead& request_;
  LoopContext& loop_;
  io::SendStart sending_;  ///< How far send_own_now's send went.
};

/// Points a connection at the request state it borrowed, for as long as it has it.
class Borrowed {
 public:
  Borrowed(ClientConnection& client, RequestState& state) : client_(client) {
    client_.state = &state;
  }
  Borrowed(const Borrowed&) = delete;
  Borrowed& operator=(const Borrowed&) = delete;
  Borrowed(Borrowed&&) = delete;
  Borrowed& operator=(Borrowed&&) = delete;
  ~Borrowed() { client_.state = nullptr; }

 private:
  ClientConnection& client_;
};

void wait_for_next_request(OpenPtr open, LoopContext& loop);

/// Serves a connection's requests from the first bytes of one, which the socket has just
/// reported, with a request state borrowed for that time, until it is parked (quiet for
/// until the loop's next parking sweep after its last answer): then waits for the next request
/// without the state, or closes the connection. `first`: this is the connection's first request.
io::Awaitable<void> serve_requests(OpenPtr open, LoopContext& loop, bool first) {
  ProxyState& proxy = loop.proxy;
  ClientConnection& client = open->client;
  std::shared_ptr<const live::Generation>& generation = open->generation;
  io::Stream& stream = client.stream;
  bool idle = false;  // parked: every request read is answered, and no other came
  {
    const RequestStatePool::Lease lease = loop.request_states.borrow();
    RequestState& state = *lease;
    const Borrowed borrowed(client, state);

    for (bool pipelined = false;; pipelined = true, first = false) {
      follow_reloads(generation, loop);
      const config::Timeouts& timeouts = generation->config->timeouts;
      if (pipelined) {  // a next request: some of its bytes in already, or soon, or none
        if (proxy.draining.load(std::memory_order_relaxed)) {
          co_return;
        }
        stream.expires_after(timeouts.idle);
        client.waiting = true;
        if (state.buffer.size() == 0) {
          client.quiet_since = std::chrono::steady_clock::now();
          loop.lingering.push_back(client);
        }
      }
      state.request_head.trim();
      RequestParser& parser = state.parser.emplace(state.request_head);
      parser.header_limit(kMaxHeaderBytes);
      parser.body_limit(boost::none);  // bodies are streamed, never held whole
      bool header_deadline = first;
      beast::error_code ec;
      for (MessageRead read(state.buffer, parser, MessageRead<true>::Until::header_done);
           read.wants_bytes(ec);) {
        if (state.buffer.size() > 0 && client.quiet.is_linked()) {
          client.quiet.unlink();  // part of a head is in: never parked with it
        }
        if (!header_deadline && state.buffer.size() > 0) {
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
      client.waiting = false;
      if (client.quiet.is_linked()) {
        client.quiet.unlink();
      }
      if (std::exchange(client.parked, false) && ec == net::error::operation_aborted &&
          state.buffer.size() == 0) {
        idle = true;  // quiet for a while: wait for its request without the state
        break;
      }
      if (ec) {  // (checked first: comparing codes of other categories is not free)
        if (ec == http::error::end_of_stream || ec == beast::error::timeout ||
            ec == net::error::connection_reset || ec == net::error::eof ||
            ec == net::error::operation_aborted || io::is_tls_error(ec)) {
          co_return;  // the client is done, or went quiet (or broke TLS: nothing to answer on)
        }
        // Too large: 431 (414); malformed: 400 (501). The connection cannot be trusted to go on.
        problem_response(state.own(), refusal_for(parser, ec), kHttp11, false);
        state.own().to_head = parser.method() == http::verb::head;
        co_await answer(stream, state.own(), timeouts.idle);
        co_return;
      }
      const RequestHead request = head_of(parser);
      Exchange exchange{
          .generation = *generation,
          .request = request,
          .decision = state.decision,
          .keep_alive = parser.keep_alive() && !proxy.draining.load(std::memory_order_relaxed),
          .started = std::chrono::steady_clock::now()};
      DescribedRequest described;
      if (client.decides) {
        described = describe(request);
        exchange.described = &described;
      }
      Http1Downstream downstream(client, request, loop);
      co_await serve_exchange(downstream, exchange, loop);
      if (!exchange.keep_alive) {
        co_return;
      }
    }
  }
  if (idle) {
    wait_for_next_request(std::move(open), loop);
  }
}

/// Waits, with no buffer, no coroutine frame and no timer of its own, for a parked
/// connection's next request: what an idle keep-alive connection costs is its socket and this
/// wait. Then serves it, or closes the connection when the loop's sweep closes its socket after
/// timeouts.idle, or a drain does.
void wait_for_next_request(OpenPtr open, LoopContext& loop) {
  if (loop.proxy.draining.load(std::memory_order_relaxed)) {
    return;  // closes it
  }
  follow_reloads(open->generation, loop);
  ClientConnection& client = open->client;
  client.stream.forget_deadline();  // the loop's timer closes it after timeouts.idle
  loop.parked.push_back(client);
  loop.proxy.parked.fetch_add(1, std::memory_order_relaxed);
  client.waiting = true;  // nothing in flight: a drain may close it
  client.stream.async_wait_readable([open = std::move(open), &loop](beast::error_code ec) mutable {
    loop.proxy.parked.fetch_sub(1, std::memory_order_relaxed);
    if (ec) {
      return;  // closes it
    }
    ClientConnection& woken = open->client;
    if (woken.quiet.is_linked()) {
      woken.quiet.unlink();
      woken.stream.expires_at(woken.quiet_since + open->generation->config->timeouts.idle);
    }
    const io::Executor executor = woken.stream.get_executor();
    net::co_spawn(executor, serve_requests(std::move(open), loop, false), net::detached);
  });
}

}  // namespace

io::Awaitable<void> serve_http1(OpenPtr open, LoopContext& loop) {
  return serve_requests(std::move(open), loop, true);
}

io::Awaitable<void> park_quiet(LoopContext& loop) {
  io::Timer timer(co_await net::this_coro::executor);
  for (;;) {
    timer.expires_after(kParkingInterval);
    co_await timer.async_wait(io::use_nothrow);
    // Every lingering one, even one that went quiet a moment ago: were its next request that
    // close, it pays only for starting a coroutine again, once.
    while (!loop.lingering.empty()) {
      ClientConnection& client = loop.lingering.front();
      loop.lingering.pop_front();
      client.parked = true;
      beast::error_code ignored;
      client.stream.socket().cancel(ignored);  // its read ends with operation_aborted
    }
    // The configuration in force times them all, so the oldest is the first to go.
    const auto idle_since = std::chrono::steady_clock::now() -
                            std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                                loop.generations.get()->config->timeouts.idle);
    while (!loop.parked.empty() && loop.parked.front().quiet_since <= idle_since) {
      ClientConnection& client = loop.parked.front();
      loop.parked.pop_front();
      beast::error_code ignored;
      client.stream.socket().close(ignored);  // its wait ends, and the connection with it
    }
  }
}

}  // namespace sluice::http
