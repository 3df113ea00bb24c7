#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <unordered_map>

#include "limiter/clock.hpp"
#include "proxy/http/upstream_pool.hpp"
#include "proxy/io/chunk_pool.hpp"
#include "proxy/io/stream.hpp"
#include "proxy/live/generation.hpp"
#include "proxy/live/reloader.hpp"
#include "proxy/store/store.hpp"
#include "proxy/telemetry/access_log.hpp"
#include "proxy/telemetry/metrics.hpp"

namespace sluice::proxy {

/// The client connections of one event loop, each with whether it is waiting for a request
/// now: on drain those have nothing in flight and are closed at once. A connection registers
/// once; between requests only its flag changes. Touched only from that loop's thread.
struct IdleConnections {
  std::unordered_map<Stream*, const bool*> open;
};

/// What every connection shares with the server. Read-only but for the counters.
struct SessionContext {
  GenerationCache* generations = nullptr;  ///< This event loop's view of the live config.
  LiveConfig* live = nullptr;
  Metrics* metrics = nullptr;
  AccessLog* access_log = nullptr;
  Reloader* reloader = nullptr;  ///< For the admin port's POST /reload.
  const limiter::Clock* clock = nullptr;
  std::atomic<bool>* draining = nullptr;            ///< Set on SIGTERM: finish, keep nothing alive.
  std::atomic<std::size_t>* connections = nullptr;  ///< Open client connections.
  /// Client connections open or being accepted, against `max_connections`.
  std::atomic<std::size_t>* slots = nullptr;
  IdleConnections* idle = nullptr;  ///< This event loop's waiting connections.
  UpstreamPool* pool = nullptr;     ///< This event loop's upstream connections.
  ChunkPool* chunks = nullptr;      ///< This event loop's body buffers.
  Store* store = nullptr;           ///< Where the limiters count.
  std::size_t loop = 0;             ///< This event loop's index (its counters).
};

/// Largest request or response header accepted (431 beyond it).
inline constexpr std::uint32_t kMaxHeaderBytes = 16 * 1024;

}  // namespace sluice::proxy
