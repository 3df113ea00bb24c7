#include "tests/support/recording_upstream.hpp"

#include <array>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

namespace sluice::test {

namespace http = boost::beast::http;
using boost::asio::use_awaitable;

RecordingUpstream::RecordingUpstream(Answer answer)
    : answer_(std::move(answer)), acceptor_(io_, {boost::asio::ip::make_address("127.0.0.1"), 0}) {
  boost::asio::co_spawn(io_, accept(), boost::asio::detached);
  thread_ = std::thread([this] { io_.run(); });
}

RecordingUpstream::~RecordingUpstream() {
  io_.stop();
  thread_.join();
}

std::string RecordingUpstream::url() const {
  return "http://127.0.0.1:" + std::to_string(acceptor_.local_endpoint().port());
}

std::vector<ReceivedRequest> RecordingUpstream::take() {
  std::unique_lock lock(mutex_);
  tunnel_ended_.wait_for(lock, std::chrono::seconds(3), [this] { return tunnels_ == 0; });
  return std::exchange(received_, {});
}

boost::asio::awaitable<void> RecordingUpstream::accept() {
  for (;;) {
    auto socket = co_await acceptor_.async_accept(use_awaitable);
    boost::asio::co_spawn(io_, serve(std::move(socket)), boost::asio::detached);
  }
}

boost::asio::awaitable<void> RecordingUpstream::serve(tcp::socket socket) {
  boost::beast::flat_buffer buffer;
  try {
    for (;;) {
      http::request_parser<http::string_body> parser;
      parser.body_limit(boost::none);
      parser.header_limit(64 * 1024);
      co_await http::async_read(socket, buffer, parser, use_awaitable);
      const auto& request = parser.get();
      ReceivedRequest received{.method = std::string(request.method_string()),
                               .target = std::string(request.target()),
                               .fields = {},
                               .body = request.body(),
                               .tunneled = {}};
      for (const auto& field : request) {
        received.fields.emplace_back(field.name_string(), field.value());
      }
      if (parser.upgrade() && !request[http::field::upgrade].empty()) {
        {
          const std::lock_guard lock(mutex_);
          ++tunnels_;  // recorded when it ends
        }
        const std::string answer =
            "HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: " +
            std::string(request[http::field::upgrade]) + "\r\n\r\n";
        co_await boost::asio::async_write(socket, boost::asio::buffer(answer), use_awaitable);
        std::string tunneled(static_cast<const char*>(buffer.data().data()), buffer.size());
        boost::beast::error_code ec;
        while (!ec) {
          std::array<char, 4096> chunk;
          const std::size_t n = co_await socket.async_read_some(
              boost::asio::buffer(chunk), boost::asio::redirect_error(use_awaitable, ec));
          tunneled.append(chunk.data(), n);
        }
        received.tunneled = std::move(tunneled);
        {
          const std::lock_guard lock(mutex_);
          received_.push_back(std::move(received));
          --tunnels_;
        }
        tunnel_ended_.notify_all();
        co_return;
      }
      if (answer_) {
        const std::string answer = answer_(received);
        {
          const std::lock_guard lock(mutex_);
          received_.push_back(std::move(received));
        }
        co_await boost::asio::async_write(socket, boost::asio::buffer(answer), use_awaitable);
        co_return;
      }
      {
        const std::lock_guard lock(mutex_);
        received_.push_back(std::move(received));
      }
      static constexpr std::string_view kAnswer = "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n";
      co_await boost::asio::async_write(socket, boost::asio::buffer(kAnswer), use_awaitable);
    }
  } catch (const boost::system::system_error&) {
    // the proxy closed the connection: normal
  }
}

}  // namespace sluice::test
