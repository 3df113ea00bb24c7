#include "proxy/cli/health_command.hpp"

#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http/empty_body.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/string_body.hpp>
#include <boost/beast/http/write.hpp>
#include <string>

namespace sluice::cli {
namespace {

namespace net = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = net::ip::tcp;

/// Where to reach an admin port that listens on `host`: a wildcard is reached on loopback.
std::string reachable(const std::string& host) {
  if (host == "0.0.0.0" || host.empty()) {
    return "127.0.0.1";
  }
  if (host == "::" || host == "[::]") {
    return "::1";
  }
  return host;
}

}  // namespace

bool check_health(const config::ProxyConfig& config, std::chrono::milliseconds timeout,
                  std::ostream& err) {
  if (!config.admin) {
    err << "sluice health: the admin port is disabled (admin: \"\") in " << config.file << '\n';
    return false;
  }
  const std::string host = reachable(config.admin->host);
  const std::string where = host + ":" + std::to_string(config.admin->port);
  net::io_context io;
  beast::tcp_stream stream(io);
  beast::flat_buffer buffer;
  http::request<http::empty_body> request{http::verb::get, "/healthz", 11};
  request.set(http::field::host, host);
  request.set(http::field::connection, "close");
  http::response<http::string_body> response;
  beast::error_code failure;
  const tcp::endpoint endpoint(net::ip::make_address(host), config.admin->port);
  stream.expires_after(timeout);  // one deadline for the whole exchange
  stream.async_connect(endpoint, [&](beast::error_code connected) {
    if (connected) {
      failure = connected;
      return;
    }
    http::async_write(stream, request, [&](beast::error_code written, std::size_t) {
      if (written) {
        failure = written;
        return;
      }
      http::async_read(stream, buffer, response,
                       [&](beast::error_code read, std::size_t) { failure = read; });
    });
  });
  io.run();
  if (failure) {
    err << "sluice health: " << where << ": "
        << (failure == beast::error::timeout ? std::string("no answer in time") : failure.message())
        << '\n';
    return false;
  }
  if (response.result() != http::status::ok) {
    err << "sluice health: " << where << " answered " << response.result_int() << '\n';
    return false;
  }
  return true;
}

}  // namespace sluice::cli
