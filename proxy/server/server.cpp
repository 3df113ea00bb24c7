#include "proxy/server/server.hpp"

#include <sys/socket.h>

#include <atomic>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/use_future.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <chrono>
#include <future>
#include <memory>
#include <sstream>
#include <thread>

#include "proxy/admin/admin.hpp"
#include "proxy/admin/shared_control.hpp"
#include "proxy/http/h2/http1_bridge.hpp"
#include "proxy/io/net.hpp"
#include "proxy/io/socket_calls.hpp"
#include "proxy/rls/rls_messages.hpp"
#include "proxy/server/jwks_refresher.hpp"
#include "proxy/server/ocsp_refresher.hpp"
#include "proxy/store/memory_store.hpp"
#include "proxy/store/redis/redis_store.hpp"

namespace sluice::server {
namespace {

/// Idle kept-alive connections per upstream and event loop (as nginx's `keepalive 64` in the
/// benchmark; with fewer than the requests in flight, every burst closes and reopens some).
constexpr std::size_t kIdleUpstreamConnections = 64;

/// Starts serving an accepted connection, on the loop's thread; the listener's index.
using Serve = void (*)(io::Socket, http::LoopContext&, std::size_t);

void serve_admin(io::Socket socket, http::LoopContext& loop, std::size_t) {
  const io::Executor executor = socket.get_executor();
  net::co_spawn(executor, admin::serve_admin(std::move(socket), loop), net::detached);
}

/// How often a loop at the connection limit looks again for a free slot.
constexpr std::chrono::milliseconds kFullRecheck{5};

/// Takes one of `limit` connection slots shared by all loops; false when all are taken.
bool take_slot(std::atomic<std::size_t>& open, std::size_t limit) noexcept {
  std::size_t now = open.load(std::memory_order_relaxed);
  while (now < limit) {
    if (open.compare_exchange_weak(now, now + 1, std::memory_order_relaxed)) {
      return true;
    }
  }
  return false;
}

/// Names the address that could not be bound, without Boost's source location.
[[noreturn]] void throw_listen_error(const tcp::endpoint& endpoint,
                                     const boost::system::system_error& error) {
  std::ostringstream text;
  text << endpoint << ": " << error.code().message();
  throw ListenError(text.str());
}

io::Awaitable<void> pause(std::chrono::milliseconds duration) {
  io::Timer timer(co_await net::this_coro::executor, duration);
  co_await timer.async_wait(io::use_nothrow);
}

/// Samples the routes' counters into the traffic history once a second, until the loop stops.
/// A tick that comes late counts the seconds that passed: the history's seconds stay seconds.
io::Awaitable<void> sample_traffic(http::ProxyState& state) {
  io::Timer timer(co_await net::this_coro::executor);
  auto last = std::chrono::steady_clock::now();
  for (;;) {
    timer.expires_at(last + std::chrono::seconds(1));
    auto [ec] = co_await timer.async_wait(io::use_nothrow);
    if (ec) {
      co_return;
    }
    const auto now = std::chrono::steady_clock::now();
    const auto seconds = std::max<std::int64_t>(
        1, std::chrono::duration_cast<std::chrono::seconds>(now - last).count());
    last += std::chrono::seconds(seconds);
    state.traffic.sample(state.metrics.route_totals(), static_cast<std::size_t>(seconds));
  }
}

/// Frees what the loop's spare pools hold beyond their recent use (io::SparePool) every
/// http::kSpareTrimInterval, until the loop stops.
io::Awaitable<void> trim_spares(http::LoopContext& loop) {
  io::Timer timer(co_await net::this_coro::executor);
  for (;;) {
    timer.expires_after(http::kSpareTrimInterval);
    auto [ec] = co_await timer.async_wait(io::use_nothrow);
    if (ec) {
      co_return;
    }
    loop.trim_spares();
  }
}

/// Accepts connections and serves each on this loop. With `counted`, each holds one of the
/// configured `max_connections` slots (given back by the session): at the limit the loop holds
/// the connection it has just accepted and accepts no other, so new connections wait in the
/// kernel's listen queue until one closes, as with HAProxy's `maxconn`, instead of being
/// refused. The slot is taken once a connection is there, not before the accept: an acceptor
/// that is only waiting holds none, so no loop keeps a slot from a connection another loop was
/// given (each loop has its own listening socket).
io::Awaitable<void> accept_loop(io::Acceptor& acceptor, http::LoopContext& loop, Serve serve,
                                std::size_t listener, bool counted) {
  std::atomic<std::size_t>& slots = loop.proxy.connection_slots;
  for (;;) {
    auto [ec, socket] = co_await acceptor.async_accept(io::use_nothrow);
    if (ec == net::error::operation_aborted || !acceptor.is_open()) {
      co_return;  // stopping
    }
    if (ec) {  // e.g. out of file descriptors: back off, keep listening
      co_await pause(std::chrono::milliseconds(100));
      continue;
    }
    while (counted && !take_slot(slots, loop.generations.get()->config->max_connections)) {
      co_await pause(kFullRecheck);
      if (!acceptor.is_open()) {
        co_return;
      }
    }
    socket.set_option(tcp::no_delay(true), ec);
    serve(std::move(socket), loop, listener);
  }
}

}  // namespace

Server::Server(live::LiveConfig& live, telemetry::Metrics& metrics,
               telemetry::AccessLog& access_log, live::Reloader* reloader,
               const limiter::Clock& clock)
    : live_(live),
      state_{.live = live,
             .metrics = metrics,
             .access_log = access_log,
             .reloader = reloader,
             .clock = clock} {}

unsigned Server::threads_for(const config::ProxyConfig& config) {
  return config.threads != 0 ? config.threads : std::max(1U, std::thread::hardware_concurrency());
}

Server::~Server() { stop(limiter::Duration::zero()); }

void Server::start() {
  const std::shared_ptr<const live::Generation> generation = live_.current();
  const config::ProxyConfig& config = *generation->config;
  generation->pipeline.use(state_.control);  // each reload's pipeline takes it from the last
  const unsigned threads = threads_for(config);
  for (const config::Listener& listener : config.listeners) {
    endpoints_.emplace_back(net::ip::make_address(listener.address.host), listener.address.port);
    tls_listeners_.push_back(listener.tls.has_value());
  }
  if (config.decide) {            // the decision service's listener comes last
    rls::discard_protobuf_log();  // a client's malformed message is no line on standard error
    decide_listener_ = endpoints_.size();
    endpoints_.emplace_back(net::ip::make_address(config.decide->address.host),
                            config.decide->address.port);
    tls_listeners_.push_back(config.decide->tls.has_value());
  }
  for (unsigned i = 0; i < threads; ++i) {
    auto loop = std::make_unique<Loop>();
    loop->pool =
        std::make_unique<http::UpstreamPool>(kIdleUpstreamConnections, config.timeouts.idle);
    for (tcp::endpoint& endpoint : endpoints_) {
      auto& acceptor = loop->acceptors.emplace_back(std::make_unique<io::Acceptor>(loop->io));
      acceptor->open(endpoint.protocol());
      acceptor->set_option(io::Acceptor::reuse_address(true));
      // Every loop listens on the same port; the kernel spreads connections among them.
      const int on = 1;
      ::setsockopt(acceptor->native_handle(), SOL_SOCKET, SO_REUSEPORT, &on, sizeof on);
      // Accepted connections inherit it: their reads learn when the socket holds nothing more.
      io::ask_for_rest_hint(acceptor->native_handle());
      try {
        acceptor->bind(endpoint);
        acceptor->listen(net::socket_base::max_listen_connections);
      } catch (const boost::system::system_error& error) {
        throw_listen_error(endpoint, error);
      }
      endpoint = acceptor->local_endpoint();  // port 0 becomes the real port
    }
    loop->context = std::make_unique<http::LoopContext>(state_, i, *loop->pool, loop->chunks,
                                                        loop->request_states);
    loop->context->tls_listeners = tls_listeners_;
    loop->context->decide_listener = decide_listener_;
    loop->context->relay_to_http2 = &http::h2::relay_http1_to_http2;
    loops_.push_back(std::move(loop));
  }
  open_store(config);
  if (config.admin) {
    Loop& first = *loops_.front();
    const tcp::endpoint admin(net::ip::make_address(config.admin->host), config.admin->port);
    try {
      admin_ = std::make_unique<io::Acceptor>(first.io, admin);
    } catch (const boost::system::system_error& error) {
      throw_listen_error(admin, error);
    }
    net::co_spawn(first.io, accept_loop(*admin_, *first.context, &serve_admin, 0, false),
                  net::detached);
  }
  // Fetched JWK Sets are refreshed off the request path, on the first loop (a reload may add
  // providers, so it runs whatever the configuration of the start).
  net::co_spawn(loops_.front()->io, refresh_key_sets(live_, state_.metrics), net::detached);
  // So are the OCSP responses the TLS listeners staple.
  net::co_spawn(loops_.front()->io, refresh_ocsp_staples(live_, state_.metrics), net::detached);
  net::co_spawn(loops_.front()->io, sample_traffic(state_), net::detached);
  // Runtime overrides and bans follow the shared store and reloads there too.
  net::co_spawn(loops_.front()->io, admin::follow_runtime_control(*loops_.front()->context),
                net::detached);
  for (std::size_t i = 0; i < loops_.size(); ++i) {
    Loop* loop = loops_[i].get();
    for (std::size_t listener = 0; listener < loop->acceptors.size(); ++listener) {
      net::co_spawn(
          loop->io,
          accept_loop(*loop->acceptors[listener], *loop->context, &serve_client, listener, true),
          net::detached);
    }
    net::co_spawn(loop->io, http::park_quiet(*loop->context), net::detached);
    net::co_spawn(loop->io, trim_spares(*loop->context), net::detached);
    loop->thread = std::thread([io = &loop->io] { io->run(); });
  }
}

void Server::open_store(const config::ProxyConfig& config) {
  if (config.store.type == config::StoreType::redis) {
    store_ = std::make_unique<store::redis::RedisStore>(config.store.redis, loops_.size());
  } else {
    store_ = std::make_unique<store::MemoryStore>();
  }
  state_.store = store_.get();
  // Each loop's connections are opened on that loop, before its thread runs it.
  for (std::size_t i = 0; i < loops_.size(); ++i) {
    net::io_context& io = loops_[i]->io;
    std::future<void> opened = net::co_spawn(io, store_->open(i), net::use_future);
    while (opened.wait_for(std::chrono::seconds(0)) != std::future_status::ready) {
      io.run_one();
    }
    io.restart();
    opened.get();  // throws store::redis::RedisError
  }
}

tcp::endpoint Server::local_endpoint() const {
  return endpoints_.empty() ? tcp::endpoint() : endpoints_.front();
}

tcp::endpoint Server::decide_endpoint() const {
  return decide_listener_ < endpoints_.size() ? endpoints_[decide_listener_] : tcp::endpoint();
}

std::string Server::listening() const {
  std::string text;
  for (std::size_t i = 0; i < endpoints_.size(); ++i) {
    std::ostringstream address;
    address << endpoints_[i];
    text += (i == 0 ? "" : ", ") + address.str() +
            (i == decide_listener_ ? (tls_listeners_[i] ? " (decide, TLS)" : " (decide)")
             : tls_listeners_[i]   ? " (TLS)"
                                   : "");
  }
  return text;
}

tcp::endpoint Server::admin_endpoint() const {
  return admin_ ? admin_->local_endpoint() : tcp::endpoint();
}

void Server::stop(limiter::Duration drain) {
  state_.draining.store(true);
  for (auto& loop : loops_) {
    // Stop accepting; close the connections that wait for a request (nothing in flight).
    net::post(loop->io, [acceptors = &loop->acceptors, clients = &loop->context->clients] {
      boost::system::error_code ignored;
      for (const auto& acceptor : *acceptors) {
        acceptor->close(ignored);
      }
      for (http::ClientConnection& client : *clients) {
        if (client.waiting) {
          client.stream.socket().cancel(ignored);
        }
      }
    });
  }
  const auto deadline = std::chrono::steady_clock::now() + drain;
  while (state_.connections.load() > 0 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  if (store_) {
    // What the loops hold that other replicas could use (leases) goes back, while they run
    // (a second at most).
    const auto given_back = std::make_shared<std::atomic<std::size_t>>(0);
    for (std::size_t i = 0; i < loops_.size(); ++i) {
      net::co_spawn(loops_[i]->io, store_->give_back(i),
                    [given_back](const std::exception_ptr&) { ++*given_back; });
    }
    const auto given_by = std::chrono::steady_clock::now() + std::chrono::seconds(1);
    while (given_back->load() < loops_.size() && std::chrono::steady_clock::now() < given_by) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  }
  if (admin_ && !loops_.empty()) {
    net::post(loops_.front()->io, [admin = admin_.get()] {
      boost::system::error_code ignored;
      admin->close(ignored);
    });
  }
  for (auto& loop : loops_) {
    loop->io.stop();
  }
  for (auto& loop : loops_) {
    if (loop->thread.joinable()) {
      loop->thread.join();
    }
  }
  admin_.reset();  // it belongs to the first loop's io_context: it must go first
  if (store_) {
    for (std::size_t i = 0; i < loops_.size(); ++i) {
      store_->close(i);  // the loops have stopped: no other thread touches the connections
    }
  }
  // The store's timers belong to the loops' io_contexts: it goes before them. What the loops
  // still hold of it (suspended coroutines) is only destroyed with them, never resumed.
  store_.reset();
  for (auto& loop : loops_) {
    // The sessions with HTTP/2 upstreams hold sockets and timers of the loop's io_context,
    // which goes before the context that keeps them: they go first (those its suspended
    // coroutines still hold go with it).
    loop->context->http2_upstreams.reset();
  }
  loops_.clear();
}

}  // namespace sluice::server
