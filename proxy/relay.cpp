#include "proxy/relay.hpp"

#include <array>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <random>
#include <string>

#include "proxy/http_text.hpp"
#include "proxy/net.hpp"
#include "proxy/responses.hpp"

namespace sluice::proxy {
namespace {

constexpr std::size_t kRelayBuffer = 16 * 1024;

/// Fields that belong to one connection, not to the message (RFC 9110 §7.6.1), plus those the
/// Connection field names. Framing (Transfer-Encoding) is re-applied by the serializer.
bool hop_by_hop(std::string_view name, std::string_view connection) {
  static constexpr std::string_view kFields[] = {"connection",
                                                 "keep-alive",
                                                 "proxy-connection",
                                                 "proxy-authenticate",
                                                 "proxy-authorization",
                                                 "te",
                                                 "trailer",
                                                 "transfer-encoding",
                                                 "upgrade"};
  for (const std::string_view field : kFields) {
    if (equal_ignoring_case(name, field)) {
      return true;
    }
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

template <bool isRequest, class Fields>
void copy_end_to_end(const http::header<isRequest, Fields>& from, http::fields& to) {
  const std::string_view connection = from[http::field::connection];
  for (const auto& field : from) {
    if (!hop_by_hop(field.name_string(), connection)) {
      to.insert(field.name_string(), field.value());
    }
  }
}

std::string new_request_id() {
  thread_local std::mt19937_64 random{std::random_device{}()};
  static constexpr char kHex[] = "0123456789abcdef";
  std::string id(32, '0');
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
                                       http::buffer_body::value_type& out_body, bool& read_failed) {
  std::array<char, kRelayBuffer> chunk;
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

net::awaitable<bool> fail(beast::tcp_stream& client, http::status status, unsigned version,
                          const Decision& decision, const SessionContext& context) {
  auto response = problem_response(status, version, false);
  add_limit_headers(response.base(), decision, context.config->limits_headers);
  co_await http::async_write(client, response, use_nothrow);
  co_return false;
}

}  // namespace

net::awaitable<bool> relay(beast::tcp_stream& client, beast::flat_buffer& client_buffer,
                           http::request_parser<http::buffer_body>& parser,
                           const tcp::endpoint& peer, const config::Upstream& upstream,
                           const Decision& decision, const SessionContext& context,
                           bool keep_alive) {
  const auto executor = co_await net::this_coro::executor;
  const config::Timeouts& timeouts = context.config->timeouts;
  auto& request = parser.get();

  tcp::resolver resolver(executor);
  auto [resolve_error, endpoints] =
      co_await resolver.async_resolve(upstream.host, std::to_string(upstream.port), use_nothrow);
  beast::tcp_stream server(executor);
  server.expires_after(timeouts.connect);
  beast::error_code connect_error = resolve_error;
  if (!resolve_error) {
    auto [ec, endpoint] = co_await server.async_connect(endpoints, use_nothrow);
    connect_error = ec;
  }
  if (connect_error) {
    co_return co_await fail(client, http::status::bad_gateway, request.version(), decision,
                            context);
  }

  http::request<http::buffer_body> out{request.method(), request.target(), request.version()};
  copy_end_to_end(request.base(), out.base());
  const std::string client_address = peer.address().to_string();
  const std::string_view forwarded_for = request["X-Forwarded-For"];
  out.set("X-Forwarded-For", forwarded_for.empty()
                                 ? client_address
                                 : std::string(forwarded_for) + ", " + client_address);
  out.set("X-Forwarded-Proto", "http");
  if (const std::string_view host = request[http::field::host]; !host.empty()) {
    out.set("X-Forwarded-Host", host);
  }
  if (request["X-Request-Id"].empty()) {
    out.set("X-Request-Id", new_request_id());
  }
  if (request.chunked()) {
    out.chunked(true);
  }
  out.keep_alive(false);  // one upstream connection per request, for now
  http::request_serializer<http::buffer_body> request_serializer{out};

  bool client_failed = false;
  if (const auto ec =
          co_await pump(client, timeouts.idle, client_buffer, parser, server, timeouts.upstream,
                        request_serializer, out.body(), client_failed)) {
    if (client_failed) {
      co_return false;  // the client went away mid-body
    }
    co_return co_await fail(
        client,
        ec == beast::error::timeout ? http::status::gateway_timeout : http::status::bad_gateway,
        request.version(), decision, context);
  }

  beast::flat_buffer server_buffer;
  http::response_parser<http::buffer_body> response_parser;
  response_parser.header_limit(kMaxHeaderBytes);
  response_parser.body_limit(boost::none);
  if (request.method() == http::verb::head) {
    response_parser.skip(true);
  }
  server.expires_after(timeouts.upstream);  // until the response header arrives
  auto [header_error, header_bytes] =
      co_await http::async_read_header(server, server_buffer, response_parser, use_nothrow);
  if (header_error) {
    co_return co_await fail(client,
                            header_error == beast::error::timeout ? http::status::gateway_timeout
                                                                  : http::status::bad_gateway,
                            request.version(), decision, context);
  }
  auto& response = response_parser.get();
  // The client hears its own HTTP version, whatever the upstream speaks.
  http::response<http::buffer_body> back{response.result(), request.version()};
  copy_end_to_end(response.base(), back.base());
  add_limit_headers(back.base(), decision, context.config->limits_headers);
  const bool has_length = response.has_content_length();
  if (response.chunked() || (!has_length && !response_parser.is_done())) {
    back.chunked(true);  // re-framed; a close-delimited body becomes chunked
  }
  back.keep_alive(keep_alive);
  http::response_serializer<http::buffer_body> response_serializer{back};
  bool upstream_failed = false;
  const beast::error_code ec =
      co_await pump(server, timeouts.upstream, server_buffer, response_parser, client,
                    timeouts.idle, response_serializer, back.body(), upstream_failed);
  co_return !ec && keep_alive;
}

}  // namespace sluice::proxy
