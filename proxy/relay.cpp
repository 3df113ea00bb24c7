#include "proxy/relay.hpp"

#include <fmt/format.h>

#include <array>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <chrono>
#include <optional>
#include <random>
#include <string>

#include "proxy/chunk_pool.hpp"
#include "proxy/http_text.hpp"
#include "proxy/net.hpp"
#include "proxy/responses.hpp"
#include "proxy/tunnel.hpp"
#include "proxy/upstream_pool.hpp"

namespace sluice::proxy {
namespace {

constexpr std::size_t kRelayBuffer = ChunkPool::kChunkBytes;

/// Fields that belong to one connection, not to the message (RFC 9110 §7.6.1), plus those the
/// Connection field names. Framing (Transfer-Encoding) is re-applied by the serializer.
bool hop_by_hop(http::field field, std::string_view name, std::string_view connection) {
  switch (field) {
    case http::field::connection:
    case http::field::keep_alive:
    case http::field::proxy_connection:
    case http::field::proxy_authenticate:
    case http::field::proxy_authorization:
    case http::field::te:
    case http::field::trailer:
    case http::field::transfer_encoding:
    case http::field::upgrade:
      return true;
    default:
      break;
  }
  for (std::size_t start = 0; start < connection.size();) {
    const std::size_t comma = std::min(connection.find(',', start), connection.size());
    if (equal_ignoring_case(trim_whitespace(connection.substr(start, comma - start)), name)) {
      return true;
    }
    start = comma + 1;
  }
  return false;
}

template <bool isRequest>
void copy_end_to_end(const http::header<isRequest, Fields>& from, Fields& to) {
  const std::string_view connection = from[http::field::connection];
  for (const auto& field : from) {
    if (!hop_by_hop(field.name(), field.name_string(), connection)) {
      to.insert(field.name(), field.name_string(), field.value());
    }
  }
}

using RequestId = std::array<char, 32>;

RequestId new_request_id() {
  thread_local std::mt19937_64 random{std::random_device{}()};
  static constexpr char kHex[] = "0123456789abcdef";
  RequestId id;
  for (std::size_t i = 0; i < id.size(); i += 16) {
    std::uint64_t bits = random();
    for (std::size_t j = 0; j < 16; ++j, bits >>= 4) {
      id[i + j] = kHex[bits & 0xf];
    }
  }
  return id;
}

/// Streams the rest of a message body from `in` (its parser) to `out` (its serializer). Each
/// read and write has its own deadline, so a large body may take as long as it keeps moving.
template <class Parser, class Serializer>
net::awaitable<beast::error_code> pump(beast::tcp_stream& in, limiter::Duration in_timeout,
                                       beast::flat_buffer& in_buffer, Parser& parser,
                                       beast::tcp_stream& out, limiter::Duration out_timeout,
                                       Serializer& serializer,
                                       http::buffer_body::value_type& out_body,
                                       std::span<char> chunk, bool& read_failed) {
  // Beast reads no more than the buffer's free capacity (at least 512 bytes): without room, a
  // body would move 512 bytes per system call.
  if (!parser.is_done() && in_buffer.capacity() < kRelayBuffer) {
    in_buffer.reserve(std::min(kRelayBuffer, in_buffer.max_size()));
  }
  do {
    if (!parser.is_done()) {
      parser.get().body().data = chunk.data();
      parser.get().body().size = chunk.size();
      in.expires_after(in_timeout);
      auto [ec, n] = co_await http::async_read(in, in_buffer, parser, use_nothrow);
      if (ec == http::error::need_buffer) {
        ec = {};
      }
      if (ec) {
        read_failed = true;
        co_return ec;
      }
      out_body.data = chunk.data();
      out_body.size = chunk.size() - parser.get().body().size;
      out_body.more = !parser.is_done();
    } else {
      out_body.data = nullptr;
      out_body.size = 0;
      out_body.more = false;
    }
    out.expires_after(out_timeout);
    auto [ec, n] = co_await http::async_write(out, serializer, use_nothrow);
    if (ec == http::error::need_buffer) {
      ec = {};
    }
    if (ec) {
      co_return ec;
    }
  } while (!parser.is_done() || !serializer.is_done());
  co_return beast::error_code{};
}

UpstreamFailure failure_of(const beast::error_code& ec) noexcept {
  return ec == beast::error::timeout ? UpstreamFailure::timeout : UpstreamFailure::broken;
}

net::awaitable<RelayOutcome> fail(beast::tcp_stream& client, UpstreamFailure failure,
                                  unsigned version, const Decision& decision,
                                  const config::ProxyConfig& config) {
  const http::status status = failure == UpstreamFailure::timeout ? http::status::gateway_timeout
                                                                  : http::status::bad_gateway;
  ResponseText body;
  auto response = problem_response(status, version, false, body);
  add_limit_headers(response.base(), decision, config.limits_headers);
  co_await http::async_write(client, response, use_nothrow);
  co_return RelayOutcome{.keep_alive = false,
                         .status = static_cast<unsigned>(status),
                         .failure = failure,
                         .upstream_time = {}};
}

/// The request as the upstream gets it: HTTP/1.1, persistent, end-to-end fields only, plus the
/// forwarding fields. `Expect` is dropped: the proxy has answered it.
void build_upstream_request(const http::request<http::buffer_body, Fields>& request,
                            std::string_view client_address, bool upgrade,
                            http::request<http::buffer_body, Fields>& out) {
  out.method(request.method());
  out.target(request.target());
  out.version(11);
  copy_end_to_end(request.base(), out.base());
  out.erase(http::field::expect);
  if (const std::string_view forwarded_for = request["X-Forwarded-For"]; forwarded_for.empty()) {
    out.set("X-Forwarded-For", client_address);
  } else {
    fmt::memory_buffer appended;
    fmt::format_to(std::back_inserter(appended), "{}, {}", forwarded_for, client_address);
    out.set("X-Forwarded-For", std::string_view(appended.data(), appended.size()));
  }
  out.set("X-Forwarded-Proto", "http");
  if (const std::string_view host = request[http::field::host]; !host.empty()) {
    out.set("X-Forwarded-Host", host);
  }
  if (request["X-Request-Id"].empty()) {
    const RequestId id = new_request_id();
    out.set("X-Request-Id", std::string_view(id.data(), id.size()));
  }
  if (request.chunked()) {
    out.chunked(true);
  }
  if (upgrade) {
    out.set(http::field::upgrade, request[http::field::upgrade]);
    out.set(http::field::connection, "upgrade");
  } else {
    out.keep_alive(true);
  }
}

bool expects_continue(const http::request<http::buffer_body, Fields>& request) {
  return equal_ignoring_case(trim_whitespace(request[http::field::expect]), "100-continue");
}

}  // namespace

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

net::awaitable<RelayOutcome> relay(beast::tcp_stream& client, beast::flat_buffer& client_buffer,
                                   RequestParser& parser, std::string_view client_address,
                                   const config::Upstream& upstream, const Decision& decision,
                                   const config::ProxyConfig& config, const SessionContext& context,
                                   bool keep_alive) {
  const config::Timeouts& timeouts = config.timeouts;
  auto& request = parser.get();
  const unsigned version = request.version();
  const bool upgrade = parser.upgrade();
  // Without a body, a send that fails on a parked connection can be repeated on a new one: the
  // upstream closed it while idle and never saw the request (nginx does the same).
  const bool repeatable = parser.is_done();
  http::request<http::buffer_body, Fields> out;
  build_upstream_request(request, client_address, upgrade, out);
  const ChunkPool::Lease chunk = context.chunks->borrow();

  UpstreamConnectionPtr connection;
  std::optional<ResponseParser> response_parser;
  std::chrono::steady_clock::time_point sent_at;
  for (bool first_try = true;; first_try = false) {
    connection.reset();  // a stale parked connection is closed here
    if (first_try) {
      connection = context.pool->take_parked(upstream);
    }
    if (!connection) {
      beast::error_code connect_error;
      connection = co_await context.pool->connect(upstream, timeouts.connect, connect_error);
    }
    if (!connection) {
      co_return co_await fail(client, UpstreamFailure::connect, version, decision, config);
    }
    beast::tcp_stream& server = connection->stream;
    beast::flat_buffer& server_buffer = connection->buffer;
    const bool may_retry = first_try && connection->reused && repeatable;
    if (first_try && !parser.is_done() && expects_continue(request)) {
      // The client waits for this before it sends the body.
      static constexpr std::string_view kContinue = "HTTP/1.1 100 Continue\r\n\r\n";
      client.expires_after(timeouts.idle);
      auto [ec, n] = co_await net::async_write(client, net::buffer(kContinue), use_nothrow);
      if (ec) {
        co_return RelayOutcome{};
      }
    }
    sent_at = std::chrono::steady_clock::now();
    http::request_serializer<http::buffer_body, Fields> request_serializer{out};
    bool client_failed = false;
    if (const auto ec =
            co_await pump(client, timeouts.idle, client_buffer, parser, server, timeouts.upstream,
                          request_serializer, out.body(), chunk.bytes(), client_failed)) {
      if (client_failed) {
        co_return RelayOutcome{};  // the client went away mid-body
      }
      if (may_retry) {
        continue;
      }
      co_return co_await fail(client, failure_of(ec), version, decision, config);
    }
    // Until the response header arrives; interim responses (100, 102, 103) are skipped.
    server.expires_after(timeouts.upstream);
    beast::error_code header_error;
    do {
      response_parser.emplace();
      response_parser->header_limit(kMaxHeaderBytes);
      response_parser->body_limit(boost::none);
      if (request.method() == http::verb::head) {
        response_parser->skip(true);
      }
      auto [ec, n] =
          co_await http::async_read_header(server, server_buffer, *response_parser, use_nothrow);
      header_error = ec;
    } while (!header_error && response_parser->get().result_int() / 100 == 1 &&
             response_parser->get().result() != http::status::switching_protocols);
    if (!header_error) {
      break;
    }
    if (may_retry && server_buffer.size() == 0 && header_error != beast::error::timeout) {
      continue;
    }
    co_return co_await fail(client, failure_of(header_error), version, decision, config);
  }
  beast::tcp_stream& server = connection->stream;
  beast::flat_buffer& server_buffer = connection->buffer;
  RelayOutcome outcome;
  outcome.upstream_time = std::chrono::steady_clock::now() - sent_at;
  auto& response = response_parser->get();
  outcome.status = response.result_int();
  const bool switching = response.result() == http::status::switching_protocols;
  if (switching && !upgrade) {  // a protocol switch nobody asked for
    co_return co_await fail(client, UpstreamFailure::broken, version, decision, config);
  }
  // The client hears its own HTTP version, whatever the upstream speaks.
  http::response<http::buffer_body, Fields> back{response.result(), version};
  copy_end_to_end(response.base(), back.base());
  add_limit_headers(back.base(), decision, config.limits_headers);
  if (switching) {
    back.set(http::field::upgrade, response[http::field::upgrade]);
    back.set(http::field::connection, "upgrade");
    http::response_serializer<http::buffer_body, Fields> serializer{back};
    client.expires_after(timeouts.idle);
    auto [ec, n] = co_await http::async_write_header(client, serializer, use_nothrow);
    if (!ec) {
      client.expires_never();
      server.expires_never();
      co_await tunnel(client.socket(), client_buffer, server.socket(), server_buffer,
                      timeouts.idle);
    }
    co_return outcome;  // an upgraded connection is never reused
  }
  const bool has_length = response.has_content_length();
  if (response.chunked() || (!has_length && !response_parser->is_done())) {
    back.chunked(true);  // re-framed; a close-delimited body becomes chunked
  }
  back.keep_alive(keep_alive);
  http::response_serializer<http::buffer_body, Fields> response_serializer{back};
  bool upstream_failed = false;
  const beast::error_code ec = co_await pump(
      server, timeouts.upstream, server_buffer, *response_parser, client, timeouts.idle,
      response_serializer, back.body(), chunk.bytes(), upstream_failed);
  if (!ec && response.keep_alive() && response_parser->is_done()) {
    context.pool->give_back(upstream, std::move(connection));
  }
  if (ec && upstream_failed) {
    outcome.failure = failure_of(ec);
  }
  outcome.keep_alive = !ec && keep_alive;
  co_return outcome;
}

}  // namespace sluice::proxy
