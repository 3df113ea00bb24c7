#include "proxy/http/fetch_client.hpp"

#include <boost/asio/ssl/stream.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/url/url_view.hpp>

#include "config/url.hpp"
#include "proxy/http/beast_http.hpp"
#include "proxy/tls/peer.hpp"

namespace sluice::http {
namespace {

using TcpStream = beast::basic_stream<tcp, io::Executor>;

/// The GET and its answer over a connected (and, for https://, handshaken) stream.
template <class Stream>
io::Awaitable<Fetched> get(Stream& stream, TcpStream& deadline, std::string_view host,
                           std::string_view target, const FetchRequest& request,
                           io::Duration timeout) {
  Fetched fetched;
  http::request<empty_body> get{verb::get, target, 11};
  get.set(field::host, host);
  get.set(field::accept, request.accept);
  get.set(field::user_agent, "sluice");
  get.set(field::connection, "close");
  deadline.expires_after(timeout);
  if (auto [error, written] = co_await async_write(stream, get, io::use_nothrow); error) {
    fetched.error = "cannot send the request: " + error.message();
    co_return fetched;
  }
  beast::flat_buffer buffer;
  response_parser<string_body> answer;
  answer.body_limit(request.body_limit);
  // Qualified: where Asio's read.hpp is seen too, argument-dependent lookup finds Asio's
  // async_read, whose completion condition (taken by value) matches the parser better.
  if (auto [error, read] =
          co_await beast::http::async_read(stream, buffer, answer, io::use_nothrow);
      error) {
    fetched.error = error == error::body_limit ? std::string(request.too_large)
                                               : "no answer: " + error.message();
    co_return fetched;
  }
  if (answer.get().result() != status::ok) {
    fetched.error = "HTTP " + std::to_string(answer.get().result_int());
    co_return fetched;
  }
  fetched.body = std::move(answer.get().body());
  co_return fetched;
}

}  // namespace

io::Awaitable<Fetched> fetch(FetchRequest request, tls::Context* context,
                             const config::UpstreamTls& tls, io::Duration timeout) {
  Fetched fetched;
  const std::optional<boost::urls::url_view> parsed = config::parse_url(request.url);
  if (!parsed || parsed->host().empty()) {
    fetched.error = "not a URL";
    co_return fetched;
  }
  const bool secure = parsed->scheme() == "https";
  if (secure && context == nullptr) {
    fetched.error = "no TLS context for https://";
    co_return fetched;
  }
  const std::string host = parsed->host();
  const std::string port =
      parsed->has_port() ? std::string(parsed->port()) : std::string(secure ? "443" : "80");
  const std::string target =
      parsed->encoded_target().empty() ? std::string("/") : std::string(parsed->encoded_target());
  const io::Executor executor = co_await net::this_coro::executor;
  io::Resolver resolver(executor);
  TcpStream stream(executor);
  stream.expires_after(timeout);
  auto [resolve_error, endpoints] = co_await resolver.async_resolve(host, port, io::use_nothrow);
  if (resolve_error) {
    fetched.error = "cannot resolve " + host + ": " + resolve_error.message();
    co_return fetched;
  }
  if (auto [error, endpoint] = co_await stream.async_connect(endpoints, io::use_nothrow); error) {
    fetched.error = "cannot connect: " + error.message();
    co_return fetched;
  }
  const std::string host_field = parsed->has_port() ? host + ":" + port : host;
  if (!secure) {
    co_return co_await get(stream, stream, host_field, target, request, timeout);
  }
  net::ssl::stream<TcpStream&> secured(stream, *context);
  if (tls.verify) {
    tls::expect_server(secured.native_handle(), tls.server_name.empty() ? host : tls.server_name);
  }
  if (auto [error] =
          co_await secured.async_handshake(net::ssl::stream_base::client, io::use_nothrow);
      error) {
    fetched.error =
        "TLS handshake failed: " + tls::handshake_failure(secured.native_handle(), error);
    co_return fetched;
  }
  co_return co_await get(secured, stream, host_field, target, request, timeout);
}

}  // namespace sluice::http
