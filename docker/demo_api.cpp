// A tiny HTTP API to put sluice in front of: `demo_api [PORT] [ADDRESS]` (default 9000 on
// 127.0.0.1; a container gives 0.0.0.0). Answers every request with a small JSON document naming
// what it received; under /slow it answers after a second (to watch a drain).
#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <chrono>
#include <iostream>
#include <string>

namespace net = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = net::ip::tcp;

namespace {

std::string json_escape(std::string_view text) {
  std::string out;
  for (const char c : text) {
    if (c == '"' || c == '\\') {
      out += '\\';
    }
    if (static_cast<unsigned char>(c) >= 0x20) {
      out += c;
    }
  }
  return out;
}

net::awaitable<void> serve(tcp::socket socket) {
  beast::flat_buffer buffer;
  try {
    for (;;) {
      http::request<http::string_body> request;
      co_await http::async_read(socket, buffer, request, net::use_awaitable);
      if (request.target().starts_with("/slow")) {
        net::steady_timer wait(socket.get_executor(), std::chrono::seconds(1));
        co_await wait.async_wait(net::use_awaitable);
      }
      http::response<http::string_body> response{http::status::ok, request.version()};
      response.set(http::field::content_type, "application/json");
      response.body() = "{\"api\":\"demo\",\"method\":\"" + json_escape(request.method_string()) +
                        "\",\"path\":\"" + json_escape(request.target()) + "\",\"client\":\"" +
                        json_escape(request["X-Forwarded-For"]) + "\"}\n";
      response.keep_alive(request.keep_alive());
      response.prepare_payload();
      co_await http::async_write(socket, response, net::use_awaitable);
      if (!request.keep_alive()) {
        break;
      }
    }
  } catch (const boost::system::system_error&) {
    // the client went away
  }
}

net::awaitable<void> accept(tcp::acceptor acceptor) {
  for (;;) {
    tcp::socket socket = co_await acceptor.async_accept(net::use_awaitable);
    net::co_spawn(acceptor.get_executor(), serve(std::move(socket)), net::detached);
  }
}

}  // namespace

int main(int argc, char** argv) {
  const auto port = static_cast<unsigned short>(argc > 1 ? std::stoi(argv[1]) : 9000);
  const std::string address = argc > 2 ? argv[2] : "127.0.0.1";
  try {
    net::io_context io;
    tcp::acceptor acceptor(io, {net::ip::make_address(address), port});
    std::cout << "demo API on http://" << address << ":" << port << std::endl;
    net::co_spawn(io, accept(std::move(acceptor)), net::detached);
    io.run();
  } catch (const std::exception& error) {
    std::cerr << "demo_api: " << error.what() << '\n';
    return 1;
  }
}
