#pragma once
// A Server on an ephemeral port in front of a real TestUpstream, and clients that speak HTTP/1.1
// (Beast, or raw bytes for malformed requests), for the proxy's socket-level tests.

#include <array>
#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <memory>
#include <string>
#include <string_view>

#include "config/load_config.hpp"
#include "proxy/server/server.hpp"
#include "tests/support/eventually.hpp"
#include "tests/support/test_upstream.hpp"

namespace sluice::test {

namespace net = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = net::ip::tcp;

/// A client that speaks raw bytes to 127.0.0.1:`port`, for what Beast's client would not send
/// or would hide (malformed requests, interim responses, upgraded connections).
class RawClient {
 public:
  explicit RawClient(unsigned short port) : socket_(io_) {
    socket_.connect(tcp::endpoint(net::ip::make_address("127.0.0.1"), port));
  }

  void write(std::string_view bytes) { net::write(socket_, net::buffer(bytes)); }

  /// Reads until `text` has arrived (`""`: until the peer closes); returns all that arrived.
  std::string read_until(std::string_view text) {
    std::string got;
    beast::error_code ec;
    while (text.empty() || got.find(text) == std::string::npos) {
      std::array<char, 4096> chunk;
      const std::size_t n = socket_.read_some(net::buffer(chunk), ec);
      if (ec) {
        break;
      }
      got.append(chunk.data(), n);
    }
    return got;
  }

  tcp::socket& socket() { return socket_; }

 private:
  net::io_context io_;
  tcp::socket socket_;
};

/// One request on a new connection to 127.0.0.1:`port`, with `Host: api.test`.
inline http::response<http::string_body> send_request(unsigned short port,
                                                      http::request<http::string_body> request) {
  net::io_context io;
  beast::tcp_stream stream(io);
  stream.connect(tcp::endpoint(net::ip::make_address("127.0.0.1"), port));
  request.set(http::field::host, "api.test");
  request.prepare_payload();
  http::write(stream, request);
  beast::flat_buffer buffer;
  http::response<http::string_body> response;
  http::read(stream, buffer, response);
  return response;
}

/// Routes that forward every request, limiting none.
inline const std::string kForwardAll = "routes: [{name: all}]";

/// A Server on an ephemeral port in front of a TestUpstream, with `limiters_and_routes` (YAML).
class ProxyFixture {
 public:
  explicit ProxyFixture(const std::string& limiters_and_routes, const std::string& extra = "") {
    const std::string yaml =
        "listen: \"127.0.0.1:0\"\nadmin: \"127.0.0.1:0\"\n" +
        std::string(extra.find("threads:") == std::string::npos ? "threads: 2\n" : "") +
        "upstream: \"http://127.0.0.1:" + std::to_string(upstream_.port()) + "\"\n" + extra + "\n" +
        limiters_and_routes;
    auto config = std::make_shared<const config::ProxyConfig>(
        config::parse_config(yaml, "test.yaml", [](std::string_view) { return std::nullopt; }));
    metrics_ = std::make_unique<telemetry::Metrics>(server::Server::threads_for(*config));
    live_ = std::make_unique<live::LiveConfig>(
        std::make_shared<const live::Generation>(config, nullptr, *metrics_));
    server_ = std::make_unique<server::Server>(*live_, *metrics_, access_log_, nullptr, clock_);
    server_->start();
  }

  unsigned short port() const { return server_->local_endpoint().port(); }
  unsigned short admin_port() const { return server_->admin_endpoint().port(); }
  sluice::test::TestUpstream& upstream() { return upstream_; }
  server::Server& server() { return *server_; }

  /// One request on a new connection (to the admin port if `admin`).
  http::response<http::string_body> send(http::request<http::string_body> request,
                                         bool admin = false) {
    return send_request(admin ? admin_port() : port(), std::move(request));
  }

  /// Raw bytes in, raw bytes out (until the proxy closes).
  std::string send_raw(const std::string& bytes) {
    RawClient client(port());
    client.write(bytes);
    return client.read_until("");
  }

 private:
  sluice::test::TestUpstream upstream_;
  limiter::SystemClock clock_;
  std::unique_ptr<telemetry::Metrics> metrics_;
  std::unique_ptr<live::LiveConfig> live_;
  telemetry::AccessLog access_log_;
  std::unique_ptr<server::Server> server_;
};

inline http::request<http::string_body> get(std::string target) {
  return {http::verb::get, target, 11};
}

/// Whether a GET of `target` on the admin port shows `text` within 10 s.
inline bool admin_shows(unsigned short admin_port, const std::string& target,
                        const std::string& text) {
  return holds_within(std::chrono::seconds(10), [&] {
    return send_request(admin_port, get(target)).body().find(text) != std::string::npos;
  });
}

inline http::request<http::string_body> post(std::string target) {
  return {http::verb::post, target, 11};
}

}  // namespace sluice::test
