#pragma once

#include <array>
#include <atomic>
#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>
#include <thread>

namespace sluice::test {

/// A real HTTP/1.1 upstream on 127.0.0.1 for proxy tests. Bodies are streamed, never held, so
/// it takes uploads of any size. Keep-alive is honoured. It answers:
/// - by default, 200 with a body that echoes the request line, every header, then the request
///   body's length and checksum (`body N SUM`);
/// - `/slow`: the same, after 1 s;
/// - `/bytes/N`: N bytes of a repeating pattern, streamed;
/// - `/then-close`: the echo, kept alive, then it closes the connection at once (as an upstream
///   closing an idle connection does);
/// - `/dies-once`: the first such request is read and its connection closed without an answer
///   (as an upstream that crashed while working on it); later ones get the echo;
/// - a WebSocket-style upgrade request: 101, then it echoes every byte back.
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
  int connections() const { return connections_.load(); }

  /// The checksum the echo reports for `body`.
  static std::uint64_t checksum(std::string_view body, std::uint64_t sum = 0) {
    for (const char c : body) {
      sum = sum * 31 + static_cast<unsigned char>(c);
    }
    return sum;
  }

 private:
  using tcp = boost::asio::ip::tcp;

  boost::asio::awaitable<void> accept();
  boost::asio::awaitable<void> serve(tcp::socket socket);
  /// N bytes ('a'..'z' repeating), streamed with a Content-Length.
  boost::asio::awaitable<void> send_bytes(tcp::socket& socket, std::uint64_t size, bool keep_alive);
  boost::asio::awaitable<void> echo_upgraded(tcp::socket& socket, boost::beast::flat_buffer& early);

  boost::asio::io_context io_;
  tcp::acceptor acceptor_;
  std::thread thread_;
  std::atomic<int> requests_{0};
  std::atomic<int> connections_{0};
  std::atomic<bool> died_once_{false};
};

/// An upstream that answers every request with the same bytes, exactly as given: for responses
/// a real server would not send (bad framing, obsolete syntax). It reads each request's head (a
/// request body is not expected), counts it, writes `response`, and then closes the connection
/// (`close_after`) or waits for the next request on it.
class CannedUpstream {
 public:
  /// `gather`: each response waits until that many requests have come (up to 5 s), so that
  /// they are all in flight at once.
  explicit CannedUpstream(std::string response, bool close_after = true, int gather = 1)
      : response_(std::move(response)),
        close_after_(close_after),
        gather_(gather),
        acceptor_(io_, {boost::asio::ip::make_address("127.0.0.1"), 0}) {
    boost::asio::co_spawn(io_, accept(), boost::asio::detached);
    thread_ = std::thread([this] { io_.run(); });
  }
  CannedUpstream(const CannedUpstream&) = delete;
  CannedUpstream& operator=(const CannedUpstream&) = delete;
  CannedUpstream(CannedUpstream&&) = delete;
  CannedUpstream& operator=(CannedUpstream&&) = delete;
  ~CannedUpstream() {
    io_.stop();
    thread_.join();
  }

  unsigned short port() const { return acceptor_.local_endpoint().port(); }
  /// "http://127.0.0.1:PORT", for a route's `upstream`.
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port()); }
  int requests() const { return requests_.load(); }
  int connections() const { return connections_.load(); }

 private:
  using tcp = boost::asio::ip::tcp;

  boost::asio::awaitable<void> accept();
  boost::asio::awaitable<void> serve(tcp::socket socket);

  const std::string response_;
  const bool close_after_;
  const int gather_;
  boost::asio::io_context io_;
  tcp::acceptor acceptor_;
  std::thread thread_;
  std::atomic<int> requests_{0};
  std::atomic<int> connections_{0};
};

}  // namespace sluice::test
