#pragma once

#include <atomic>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <cstddef>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "config/proxy_config.hpp"
#include "limiter/clock.hpp"
#include "proxy/http/http1_connection.hpp"
#include "proxy/io/net.hpp"
#include "proxy/pipeline/pipeline.hpp"
#include "proxy/server/connection_start.hpp"
#include "proxy/store/store.hpp"

namespace sluice::server {

/// An address the proxy cannot listen on: "127.0.0.1:8443: Address already in use".
class ListenError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// The proxy's listening side: `threads` event loops (one per core by default), each with its
/// own io_context and its own SO_REUSEPORT acceptor, so a connection lives on one thread and
/// threads share nothing but the pipeline.
class Server {
 public:
  /// Everything given must outlive the server. `listen`, `admin` and `threads` are read from
  /// the live configuration once, at start; `metrics` must have one slot per thread.
  /// `reloader` may be null (no POST /reload).
  Server(live::LiveConfig& live, telemetry::Metrics& metrics, telemetry::AccessLog& access_log,
         live::Reloader* reloader, const limiter::Clock& clock);
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;
  Server(Server&&) = delete;
  Server& operator=(Server&&) = delete;
  ~Server();

  /// Binds, connects the Redis store if the configuration has one, and starts the event loops.
  /// Throws ListenError when it cannot bind a listener or the admin port, StoreError when the store
  /// cannot be used.
  void start();
  /// The first listener's bound address (the real port when the config asked for port 0).
  boost::asio::ip::tcp::endpoint local_endpoint() const;
  /// The decision service's bound address (`decide`); unspecified when it is off.
  boost::asio::ip::tcp::endpoint decide_endpoint() const;
  /// Every listener's bound address, in the config's order, the decision service's last.
  const std::vector<boost::asio::ip::tcp::endpoint>& local_endpoints() const noexcept {
    return endpoints_;
  }
  /// "0.0.0.0:8080, 0.0.0.0:8443 (TLS)", for the start message.
  std::string listening() const;
  /// The admin port's bound address; unspecified when the admin port is disabled.
  boost::asio::ip::tcp::endpoint admin_endpoint() const;
  /// Stops accepting, lets connections finish their request for up to `drain`, then stops.
  void stop(limiter::Duration drain);
  std::size_t open_connections() const noexcept { return state_.connections.load(); }
  /// Of those, the ones parked between requests (see http/http1_connection.hpp).
  std::size_t parked_connections() const noexcept { return state_.parked.load(); }
  /// Where the limiters count: memory or Redis, as the configuration says.
  store::Store* store() const noexcept { return store_.get(); }

  /// Event-loop threads for a configuration: `threads`, or one per core when 0.
  static unsigned threads_for(const config::ProxyConfig& config);

 private:
  struct Loop {
    /// Outlive `io`: coroutine frames destroyed with it give their buffers back.
    io::ChunkPool chunks{kSpareChunks, kMaxChunks};
    http::RequestStatePool request_states{kSpareRequestStates, kMaxRequestStates};
    /// What this loop's connections share. Outlives `io` too: the sessions still open when the
    /// loop stops are destroyed with it, and they leave its list of connections on the way out.
    /// (Made once `pool` exists; `pool` goes first, but a session touches it only while it runs.)
    std::unique_ptr<http::LoopContext> context;
    /// One thread runs it and only that thread touches its sockets, so Asio may skip the
    /// per-socket locks; other threads only post to it.
    boost::asio::io_context io{BOOST_ASIO_CONCURRENCY_HINT_UNSAFE_IO};
    std::vector<std::unique_ptr<io::Acceptor>> acceptors;  ///< One per listener.
    std::unique_ptr<http::UpstreamPool> pool;  ///< Holds sockets of `io`: declared after it.
    std::thread thread;
  };

  /// What a loop's pools keep at least, and at most while that many are in use at once
  /// (io::SparePool): 16 KB body buffers, 64 to 256 (1 to 4 MB); 3.5 KB request states, 64 to
  /// 1,024 (224 KB to 3.5 MB).
  static constexpr std::size_t kSpareChunks = 64;
  static constexpr std::size_t kMaxChunks = 256;
  static constexpr std::size_t kSpareRequestStates = 64;
  static constexpr std::size_t kMaxRequestStates = 1024;

  live::LiveConfig& live_;
  http::ProxyState state_;
  std::vector<std::unique_ptr<Loop>> loops_;
  std::unique_ptr<io::Acceptor> admin_;  ///< On the first loop.
  std::vector<boost::asio::ip::tcp::endpoint> endpoints_;
  std::vector<bool> tls_listeners_;
  std::size_t decide_listener_ = static_cast<std::size_t>(-1);  ///< In endpoints_; npos: none.
  /// Holds sockets of the loops' io_contexts: closed in stop() before they go.
  std::unique_ptr<store::Store> store_;

  void open_store(const config::ProxyConfig& config);
};

}  // namespace sluice::server
