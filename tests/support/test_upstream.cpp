// A coroutine defined in a header included by several test files trips GCC's LTO ODR check:
// the upstream's coroutines live here, once.
#include "tests/support/test_upstream.hpp"

namespace sluice::test {

using tcp = boost::asio::ip::tcp;

boost::asio::awaitable<void> TestUpstream::accept() {
  for (;;) {
    auto socket = co_await acceptor_.async_accept(boost::asio::use_awaitable);
    ++connections_;
    boost::asio::co_spawn(io_, serve(std::move(socket)), boost::asio::detached);
  }
}

boost::asio::awaitable<void> TestUpstream::serve(tcp::socket socket) {
  namespace http = boost::beast::http;
  using boost::asio::use_awaitable;
  boost::beast::flat_buffer buffer;
  buffer.reserve(64 * 1024);  // else Beast reads 512 bytes at a time
  try {
    for (;;) {
      http::request_parser<http::buffer_body> parser;
      parser.body_limit(boost::none);
      co_await http::async_read_header(socket, buffer, parser, use_awaitable);
      ++requests_;  // counted on arrival: a test may wait for it to be in flight
      std::array<char, 64 * 1024> chunk;
      std::uint64_t length = 0;
      std::uint64_t sum = 0;
      while (!parser.is_done()) {
        parser.get().body().data = chunk.data();
        parser.get().body().size = chunk.size();
        boost::beast::error_code ec;
        co_await http::async_read(socket, buffer, parser,
                                  boost::asio::redirect_error(use_awaitable, ec));
        if (ec && ec != http::error::need_buffer) {
          throw boost::system::system_error(ec);
        }
        const std::size_t n = chunk.size() - parser.get().body().size;
        length += n;
        sum = checksum({chunk.data(), n}, sum);
      }
      const auto& request = parser.get();
      const std::string target(request.target());
      if (target == "/dies-once" && !died_once_.exchange(true)) {
        break;  // closes the connection, the request unanswered
      }
      if (target == "/slow") {
        boost::asio::steady_timer wait(io_, std::chrono::seconds(1));
        co_await wait.async_wait(use_awaitable);
      }
      if (parser.upgrade()) {
        co_await echo_upgraded(socket, buffer);
        co_return;
      }
      if (target.starts_with("/bytes/")) {
        co_await send_bytes(socket, std::stoull(target.substr(7)), request.keep_alive());
      } else {
        std::string echo = std::string(request.method_string()) + " " + target + "\n";
        for (const auto& field : request) {
          echo += std::string(field.name_string()) + ": " + std::string(field.value()) + "\n";
        }
        echo += "body " + std::to_string(length) + " " + std::to_string(sum) + "\n";
        http::response<http::string_body> response{http::status::ok, request.version()};
        response.set(http::field::content_type, "text/plain");
        response.body() = std::move(echo);
        response.keep_alive(request.keep_alive());
        response.prepare_payload();
        co_await http::async_write(socket, response, use_awaitable);
      }
      if (!request.keep_alive() || target == "/then-close") {
        break;
      }
    }
  } catch (const boost::system::system_error&) {
    // the peer went away: normal for a test upstream
  }
  // A FIN now, even if a child process a test started (curl) holds a copy of the descriptor:
  // closing alone would leave the connection open as long as that copy.
  boost::system::error_code ignored;
  socket.shutdown(tcp::socket::shutdown_both, ignored);
}

boost::asio::awaitable<void> TestUpstream::send_bytes(tcp::socket& socket, std::uint64_t size,
                                                      bool keep_alive) {
  namespace http = boost::beast::http;
  http::response<http::buffer_body> response{http::status::ok, 11};
  response.content_length(size);
  response.keep_alive(keep_alive);
  http::response_serializer<http::buffer_body> serializer{response};
  co_await http::async_write_header(socket, serializer, boost::asio::use_awaitable);
  std::array<char, 64 * 1024> chunk;
  for (std::size_t i = 0; i < chunk.size(); ++i) {
    chunk[i] = static_cast<char>('a' + i % 26);
  }
  std::uint64_t sent = 0;
  while (sent < size) {
    const std::size_t offset = sent % 26;  // keep the pattern continuous across chunks
    const std::size_t n =
        static_cast<std::size_t>(std::min<std::uint64_t>(chunk.size() - 26, size - sent));
    co_await boost::asio::async_write(socket, boost::asio::buffer(chunk.data() + offset, n),
                                      boost::asio::use_awaitable);
    sent += n;
  }
}

boost::asio::awaitable<void> TestUpstream::echo_upgraded(tcp::socket& socket,
                                                         boost::beast::flat_buffer& early) {
  const std::string accept =
      "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n";
  co_await boost::asio::async_write(socket, boost::asio::buffer(accept),
                                    boost::asio::use_awaitable);
  if (early.size() > 0) {
    co_await boost::asio::async_write(socket, early.data(), boost::asio::use_awaitable);
  }
  std::array<char, 4096> chunk;
  for (;;) {
    const std::size_t n =
        co_await socket.async_read_some(boost::asio::buffer(chunk), boost::asio::use_awaitable);
    co_await boost::asio::async_write(socket, boost::asio::buffer(chunk.data(), n),
                                      boost::asio::use_awaitable);
  }
}

boost::asio::awaitable<void> CannedUpstream::accept() {
  for (;;) {
    auto socket = co_await acceptor_.async_accept(boost::asio::use_awaitable);
    ++connections_;
    boost::asio::co_spawn(io_, serve(std::move(socket)), boost::asio::detached);
  }
}

boost::asio::awaitable<void> CannedUpstream::serve(tcp::socket socket) {
  using boost::asio::use_awaitable;
  std::string received;
  try {
    for (;;) {
      std::size_t end = 0;
      while ((end = received.find("\r\n\r\n")) == std::string::npos) {
        std::array<char, 4096> chunk;
        const std::size_t n =
            co_await socket.async_read_some(boost::asio::buffer(chunk), use_awaitable);
        received.append(chunk.data(), n);
      }
      received.erase(0, end + 4);
      ++requests_;
      boost::asio::steady_timer wait(io_);
      for (int waited = 0; requests_.load() < gather_ && waited < 5000; ++waited) {
        wait.expires_after(std::chrono::milliseconds(1));
        co_await wait.async_wait(use_awaitable);
      }
      co_await boost::asio::async_write(socket, boost::asio::buffer(response_), use_awaitable);
      if (close_after_) {
        socket.shutdown(tcp::socket::shutdown_send);
        // Until the proxy closes its side: closing first could reset what was just sent.
        std::array<char, 4096> chunk;
        for (;;) {
          co_await socket.async_read_some(boost::asio::buffer(chunk), use_awaitable);
        }
      }
    }
  } catch (const boost::system::system_error&) {
    // the peer went away: normal for a test upstream
  }
  // A FIN now, even if a child process a test started (curl) holds a copy of the descriptor:
  // closing alone would leave the connection open as long as that copy.
  boost::system::error_code ignored;
  socket.shutdown(tcp::socket::shutdown_both, ignored);
}

}  // namespace sluice::test
