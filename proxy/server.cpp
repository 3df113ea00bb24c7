#include "proxy/server.hpp"

#include <sys/socket.h>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <chrono>

#include "proxy/net.hpp"

namespace sluice::proxy {
namespace {

net::awaitable<void> accept_loop(tcp::acceptor& acceptor, SessionContext context) {
  for (;;) {
    auto [ec, socket] = co_await acceptor.async_accept(use_nothrow);
    if (ec == net::error::operation_aborted || !acceptor.is_open()) {
      co_return;  // stopping
    }
    if (ec) {  // e.g. out of file descriptors: back off, keep listening
      net::steady_timer pause(co_await net::this_coro::executor, std::chrono::milliseconds(100));
      co_await pause.async_wait(use_nothrow);
      continue;
    }
    socket.set_option(tcp::no_delay(true), ec);
    net::co_spawn(acceptor.get_executor(), serve_client(std::move(socket), context), net::detached);
  }
}

}  // namespace

Server::Server(const config::ProxyConfig& config, Pipeline& pipeline, const limiter::Clock& clock)
    : config_(config), context_{&pipeline, &config, &clock, &draining_, &connections_} {}

Server::~Server() { stop(limiter::Duration::zero()); }

void Server::start() {
  unsigned threads = config_.threads;
  if (threads == 0) {
    threads = std::max(1U, std::thread::hardware_concurrency());
  }
  endpoint_ = tcp::endpoint(net::ip::make_address(config_.listen.host), config_.listen.port);
  for (unsigned i = 0; i < threads; ++i) {
    auto loop = std::make_unique<Loop>();
    loop->acceptor = std::make_unique<tcp::acceptor>(loop->io);
    loop->acceptor->open(endpoint_.protocol());
    loop->acceptor->set_option(tcp::acceptor::reuse_address(true));
    // Every loop listens on the same port; the kernel spreads connections among them.
    const int on = 1;
    ::setsockopt(loop->acceptor->native_handle(), SOL_SOCKET, SO_REUSEPORT, &on, sizeof on);
    loop->acceptor->bind(endpoint_);
    loop->acceptor->listen(net::socket_base::max_listen_connections);
    endpoint_ = loop->acceptor->local_endpoint();  // port 0 becomes the real port
    loops_.push_back(std::move(loop));
  }
  for (auto& loop : loops_) {
    SessionContext context = context_;
    context.idle = &loop->idle;
    net::co_spawn(loop->io, accept_loop(*loop->acceptor, context), net::detached);
    loop->thread = std::thread([io = &loop->io] { io->run(); });
  }
}

tcp::endpoint Server::local_endpoint() const { return endpoint_; }

void Server::stop(limiter::Duration drain) {
  draining_.store(true);
  for (auto& loop : loops_) {
    // Stop accepting; close the connections that wait for a request (nothing in flight).
    net::post(loop->io, [acceptor = loop->acceptor.get(), idle = &loop->idle] {
      boost::system::error_code ignored;
      acceptor->close(ignored);
      for (beast::tcp_stream* stream : idle->waiting) {
        stream->socket().cancel(ignored);
      }
    });
  }
  const auto deadline = std::chrono::steady_clock::now() + drain;
  while (connections_.load() > 0 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  for (auto& loop : loops_) {
    loop->io.stop();
  }
  for (auto& loop : loops_) {
    if (loop->thread.joinable()) {
      loop->thread.join();
    }
  }
  loops_.clear();
}

}  // namespace sluice::proxy
