#pragma once

#include <atomic>
#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <chrono>
#include <string>
#include <thread>

namespace sluice::test {

/// A real HTTP/1.1 upstream on 127.0.0.1 for proxy tests. It answers every request with 200 and
/// a body that echoes what it received: the request line, every header, then the body's length
/// and a checksum. `/slow` answers after 2 s. Keep-alive is honoured.
class TestUpstream {
 public:
  TestUpstream() : acceptor_(io_, {boost::asio::ip::make_address("127.0.0.1"), 0}) {
    boost::asio::co_spawn(io_, accept(), boost::asio::detached);
    thread_ = std::thread([this] { io_.run(); });
  }
  TestUpstream(const TestUpstream&) = delete;
  TestUpstream& operator=(const TestUpstream&) = delete;
  TestUpstream(TestUpstream&&) = delete;
  TestUpstream& operator=(TestUpstream&&) = delete;
  ~TestUpstream() {
    io_.stop();
    thread_.join();
  }

  unsigned short port() const { return acceptor_.local_endpoint().port(); }
  int requests() const { return requests_.load(); }

 private:
  boost::asio::awaitable<void> accept() {
    for (;;) {
      auto socket = co_await acceptor_.async_accept(boost::asio::use_awaitable);
      boost::asio::co_spawn(io_, serve(std::move(socket)), boost::asio::detached);
    }
  }

  boost::asio::awaitable<void> serve(boost::asio::ip::tcp::socket socket) {
    namespace http = boost::beast::http;
    boost::beast::flat_buffer buffer;
    try {
      for (;;) {
        http::request_parser<http::string_body> parser;
        parser.body_limit(1ULL << 32);
        co_await http::async_read(socket, buffer, parser, boost::asio::use_awaitable);
        const auto& request = parser.get();
        if (request.target() == "/slow") {
          ++requests_;  // counted on arrival: a test may wait for it to be in flight
          boost::asio::steady_timer wait(io_, std::chrono::seconds(1));
          co_await wait.async_wait(boost::asio::use_awaitable);
        } else {
          ++requests_;
        }
        std::string echo =
            std::string(request.method_string()) + " " + std::string(request.target()) + "\n";
        for (const auto& field : request) {
          echo += std::string(field.name_string()) + ": " + std::string(field.value()) + "\n";
        }
        std::uint64_t checksum = 0;
        for (const char c : request.body()) {
          checksum = checksum * 31 + static_cast<unsigned char>(c);
        }
        echo +=
            "body " + std::to_string(request.body().size()) + " " + std::to_string(checksum) + "\n";
        http::response<http::string_body> response{http::status::ok, request.version()};
        response.set(http::field::content_type, "text/plain");
        response.body() = std::move(echo);
        response.keep_alive(request.keep_alive());
        response.prepare_payload();
        co_await http::async_write(socket, response, boost::asio::use_awaitable);
        if (!request.keep_alive()) {
          break;
        }
      }
    } catch (const boost::system::system_error&) {
      // the peer went away: normal for a test upstream
    }
  }

  boost::asio::io_context io_;
  boost::asio::ip::tcp::acceptor acceptor_;
  std::thread thread_;
  std::atomic<int> requests_{0};
};

}  // namespace sluice::test
