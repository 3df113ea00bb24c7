#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "limiter/clock.hpp"
#include "proxy/http/client_connection.hpp"
#include "proxy/http/request_state.hpp"
#include "proxy/http/upstream_pool.hpp"
#include "proxy/io/spare_pool.hpp"
#include "proxy/io/stream.hpp"
#include "proxy/live/generation.hpp"
#include "proxy/live/reloader.hpp"
#include "proxy/store/store.hpp"
#include "proxy/telemetry/access_log.hpp"
#include "proxy/telemetry/metrics.hpp"
#include "proxy/telemetry/traffic_history.hpp"

namespace sluice::http {

namespace h2 {
class UpstreamSessions;
}
struct Exchange;
struct LoopContext;
struct RelayOutcome;

/// Relays an HTTP/1.1 client's request to an HTTP/2 upstream (h2c://, h2://) and the response
/// back: the HTTP/2 layer's (h2::relay_http1_to_http2), plugged in by the server, so that http/
/// never includes h2/.
using Http2Relay = io::Awaitable<RelayOutcome> (*)(ClientConnection& downstream,
                                                   const Exchange& exchange, LoopContext& loop);

/// What every event loop shares with the others: the configuration in force, where limits are
/// counted, the counters and the process's switches. Owned by the server; the atomics are the
/// only members written while it serves.
struct ProxyState {
  live::LiveConfig& live;
  telemetry::Metrics& metrics;
  telemetry::AccessLog& access_log;
  live::Reloader* reloader = nullptr;  ///< For the admin port's POST /reload; null without one.
  const limiter::Clock& clock;
  store::Store* store = nullptr;  ///< Set once the store is open, before serving.
  /// Runtime overrides and bans (SPEC §10): handed to every generation's pipeline.
  std::shared_ptr<pipeline::RuntimeControl> control = std::make_shared<pipeline::RuntimeControl>();
  std::atomic<bool> draining{false};        ///< Set on SIGTERM: finish, keep nothing alive.
  std::atomic<std::size_t> connections{0};  ///< Open client connections.
  /// Of those, the ones parked: waiting for their next request with no buffer, no coroutine and
  /// no timer of their own (counted when a connection parks, not per request).
  std::atomic<std::size_t> parked{0};
  std::atomic<std::size_t> connection_slots{0};  ///< Open, vs max_connections.
  /// Requests per second by route, sampled by a timer on the first loop (the operators' page).
  telemetry::TrafficHistory traffic{};
};

/// Charge work kept per loop: at least as much as requests that wait for a shared store at
/// once in a loop's usual batch; at most 1,024 (1.7 MB) while that many are decided at once.
inline constexpr std::size_t kSpareChargeWork = 64;
inline constexpr std::size_t kMaxChargeWork = 1024;

/// How often a loop trims its spare pools (io::SparePool): the spares a burst left are freed
/// 0.25 to 0.5 s after it ended; a steady load reaches its number in flight in every period.
inline constexpr std::chrono::milliseconds kSpareTrimInterval{250};

/// What one event loop owns for the connections it serves. Touched only from that loop's
/// thread (but `proxy`, which all loops share).
struct LoopContext {
  LoopContext(ProxyState& shared, std::size_t loop_index, UpstreamPool& upstreams,
              io::ChunkPool& body_chunks, RequestStatePool& spare_request_states)
      : proxy(shared),
        index(loop_index),
        generations(shared.live),
        pool(upstreams),
        chunks(body_chunks),
        request_states(spare_request_states) {}

  ProxyState& proxy;
  std::size_t index;                  ///< This loop's slot in per-loop counters and stores.
  live::GenerationCache generations;  ///< This loop's view of the live configuration.
  ClientConnections clients;          ///< This loop's open client connections.
  QuietConnections lingering;         ///< Those between requests, not parked yet.
  QuietConnections parked;            ///< Those between requests, parked.
  UpstreamPool& pool;                 ///< This loop's upstream connections.
  io::ChunkPool& chunks;              ///< This loop's body buffers.
  RequestStatePool& request_states;   ///< What its connections borrow while they are busy.
  /// What its requests borrow while they are decided. (Destroyed after the loop's io_context,
  /// whose coroutine frames give theirs back, as the pools above.)
  ChargeWorkPool charge_work{kSpareChargeWork, kMaxChargeWork};
  /// What the decision service's RLS calls borrow (h2/rls_call.cpp), made by the first one.
  std::unique_ptr<io::SpareStock> rls_call_scratch;
  /// This loop's sessions with HTTP/2 upstreams (h2c://, h2://), made on first use.
  std::shared_ptr<h2::UpstreamSessions> http2_upstreams;
  /// How an HTTP/1.1 client's request goes to an HTTP/2 upstream; null without the HTTP/2 layer
  /// (then such a request is answered 502).
  Http2Relay relay_to_http2 = nullptr;
  /// By listener index: whether it speaks TLS, as bound at start (a reload cannot change it).
  std::vector<bool> tls_listeners;
  /// The listener index of the decision service (`decide`, SPEC §11), or npos when it is off.
  std::size_t decide_listener = static_cast<std::size_t>(-1);

  /// Frees the spares the loop's pools hold beyond what they lent at once lately: called every
  /// kSpareTrimInterval (io::SparePool).
  void trim_spares() {
    chunks.trim();
    request_states.trim();
    charge_work.trim();
    if (rls_call_scratch) {
      rls_call_scratch->trim();
    }
  }
};

}  // namespace sluice::http
