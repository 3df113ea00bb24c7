#pragma once

#include <atomic>
#include <cstddef>
#include <memory>

#include "proxy/http/client_connection.hpp"
#include "proxy/http/loop_context.hpp"
#include "proxy/live/generation.hpp"

namespace sluice::http {

/// Counts a connection while it is open, and gives its slot (taken by the accept loop) back
/// when it closes.
struct ConnectionCount {
  ConnectionCount(std::atomic<std::size_t>& count, std::atomic<std::size_t>& slots)
      : count_(&count), slots_(&slots) {
    count_->fetch_add(1, std::memory_order_relaxed);
  }
  ConnectionCount(const ConnectionCount&) = delete;
  ConnectionCount& operator=(const ConnectionCount&) = delete;
  ConnectionCount(ConnectionCount&&) = delete;
  ConnectionCount& operator=(ConnectionCount&&) = delete;
  ~ConnectionCount() {
    count_->fetch_sub(1, std::memory_order_relaxed);
    slots_->fetch_sub(1, std::memory_order_relaxed);
  }
  std::atomic<std::size_t>* count_;
  std::atomic<std::size_t>* slots_;
};

/// A client connection as the session holds it: counted among the open ones, and listed in its
/// loop's, for as long as it is open. Owned by the coroutine serving its requests while it has
/// some, and by its wait for the next one while it has none.
struct OpenConnection {
  OpenConnection(io::Socket socket, LoopContext& loop)
      : counted(loop.proxy.connections, loop.proxy.connection_slots),
        client(std::move(socket)),
        generation(loop.generations.get()),
        draining(loop.proxy.draining) {
    loop.clients.push_back(client);  // it leaves the list when it goes
  }
  OpenConnection(const OpenConnection&) = delete;
  OpenConnection& operator=(const OpenConnection&) = delete;
  OpenConnection(OpenConnection&&) = delete;
  OpenConnection& operator=(OpenConnection&&) = delete;
  ~OpenConnection() {
    beast::error_code ignored;
    client.stream.socket().shutdown(io::Socket::shutdown_send, ignored);
  }

  const ConnectionCount counted;
  ClientConnection client;
  /// The generation it serves with; replaced between requests after a reload.
  std::shared_ptr<const live::Generation> generation;
  const std::atomic<bool>& draining;  ///< The proxy's: set when it stops.
};

/// Closes a connection when its last owner lets it go: at once, or after a TLS goodbye when
/// TLS is still in good shape (not failed, not timed out, not stopping).
struct CloseConnection {
  void operator()(OpenConnection* open) const noexcept;
};
using OpenPtr = std::unique_ptr<OpenConnection, CloseConnection>;

/// Moves `generation` to the live one after a reload; a connection changes between requests.
inline void follow_reloads(std::shared_ptr<const live::Generation>& generation, LoopContext& loop) {
  if (const auto& live = loop.generations.get(); live.get() != generation.get()) {
    generation = live;
  }
}

}  // namespace sluice::http
