#include "proxy/session.hpp"

#include <array>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <vector>

#include "proxy/net.hpp"
#include "proxy/relay.hpp"
#include "proxy/responses.hpp"

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
net::awaitable<bool> answer(beast::tcp_stream& client, http::response<http::string_body> response) {
  const bool keep = response.keep_alive();
  auto [ec, written] = co_await http::async_write(client, response, use_nothrow);
  co_return !ec && keep;
}

/// Counts a connection while it is open.
struct ConnectionCount {
  explicit ConnectionCount(std::atomic<std::size_t>* count) : count_(count) {
    count_->fetch_add(1, std::memory_order_relaxed);
  }
  ConnectionCount(const ConnectionCount&) = delete;
  ConnectionCount& operator=(const ConnectionCount&) = delete;
  ConnectionCount(ConnectionCount&&) = delete;
  ConnectionCount& operator=(ConnectionCount&&) = delete;
  ~ConnectionCount() { count_->fetch_sub(1, std::memory_order_relaxed); }
  std::atomic<std::size_t>* count_;
};

}  // namespace

net::awaitable<void> serve_client(tcp::socket socket, SessionContext context) {
  const ConnectionCount counted(context.connections);
  beast::error_code ignored;
  const tcp::endpoint peer_endpoint = socket.remote_endpoint(ignored);
  const IpAddress peer = address_of(peer_endpoint);
  beast::tcp_stream client(std::move(socket));
  beast::flat_buffer buffer(kMaxHeaderBytes);
  std::vector<Header> headers;  // views into the parser's fields; capacity reused
  headers.reserve(32);
  const config::Timeouts& timeouts = context.config->timeouts;

  for (bool first = true;; first = false) {
    http::request_parser<http::buffer_body> parser;
    parser.header_limit(kMaxHeaderBytes);
    parser.body_limit(boost::none);  // bodies are streamed, never held whole
    if (context.draining->load(std::memory_order_relaxed)) {
      break;
    }
    client.expires_after(first ? timeouts.header : timeouts.idle);
    context.idle->waiting.insert(&client);  // nothing in flight: a drain may close it
    auto [ec, read] = co_await http::async_read_header(client, buffer, parser, use_nothrow);
    context.idle->waiting.erase(&client);
    if (ec == http::error::header_limit) {
      co_await answer(client,
                      problem_response(http::status::request_header_fields_too_large, 11, false));
      break;
    }
    if (ec == http::error::end_of_stream || ec == beast::error::timeout ||
        ec == net::error::connection_reset || ec == net::error::eof ||
        ec == net::error::operation_aborted) {
      break;  // the client is done, or went quiet
    }
    if (ec) {  // malformed: 400, and the connection cannot be trusted to continue
      co_await answer(client, problem_response(http::status::bad_request, 11, false));
      break;
    }
    auto& request = parser.get();
    headers.clear();
    for (const auto& field : request) {
      headers.push_back({field.name_string(), field.value()});
    }
    const RequestView view{.method = request.method_string(),
                           .target = request.target(),
                           .host = request[http::field::host],
                           .headers = headers,
                           .peer = peer};
    const Decision decision = context.pipeline->decide(view, context.clock->now());
    // A body left unread would be taken for the next request: only keep alive without one.
    bool keep_alive = request.keep_alive() && !context.draining->load(std::memory_order_relaxed);
    const bool forward =
        (decision.outcome == Outcome::allowed || decision.outcome == Outcome::delayed) &&
        !decision.route->respond;
    if (!forward) {
      keep_alive = keep_alive && parser.is_done();
      const bool again = co_await answer(
          client,
          own_response(decision, request.version(), keep_alive, context.config->limits_headers));
      context.pipeline->release(decision);
      if (!again) {
        break;
      }
      continue;
    }
    if (decision.hold > limiter::Duration::zero()) {
      // Delay mode: a timer, never a blocked thread.
      net::steady_timer hold(co_await net::this_coro::executor, decision.hold);
      co_await hold.async_wait(use_nothrow);
    }
    const config::Upstream& upstream =
        decision.route->upstream ? *decision.route->upstream : *context.config->upstream;
    const bool again = co_await relay(client, buffer, parser, peer_endpoint, upstream, decision,
                                      context, keep_alive);
    context.pipeline->release(decision);
    if (!again) {
      break;
    }
  }
  client.socket().shutdown(tcp::socket::shutdown_send, ignored);
}

}  // namespace sluice::proxy
