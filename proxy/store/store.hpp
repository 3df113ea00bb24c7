#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "limiter/time.hpp"
#include "proxy/io/net.hpp"
#include "proxy/pipeline/pipeline.hpp"
#include "proxy/store/store_error.hpp"

namespace sluice::store {

/// What a store that lives outside the process reports on the admin port (/metrics, /readyz).
struct StoreHealth {
  std::string_view name;                ///< As `store:` spells it.
  bool available = true;                ///< False while it fails and requests follow `on_error`.
  std::uint64_t errors = 0;             ///< Requests it could not decide.
  std::uint64_t cached_refusals = 0;    ///< Requests refused without asking it.
  std::uint64_t calls = 0;              ///< Round trips made (a batch of requests each).
  std::uint64_t requests_in_calls = 0;  ///< Requests those round trips carried.
  /// Requests charged on one Redis Cluster master and taken back there, since another master
  /// refused them (their limiters live on both).
  std::uint64_t refunds = 0;
  /// Charges settled after the response (SPEC §9) that it did not take: it failed, or
  /// `on_error` dropped them.
  std::uint64_t lost_settlements = 0;
  std::uint64_t lease_hits = 0;  ///< Requests admitted from leases, without a round trip.
  /// What holds leases on the store: every event loop of every replica that leases, as they
  /// count themselves in it; 0: not counted.
  std::uint64_t lease_holders = 0;
  /// One Redis, or each Redis Cluster master met so far, and its circuit breaker.
  struct Node {
    std::string address;  ///< "host:port".
    bool breaker_open = false;
    bool serving = false;  ///< A loop's slot map names it a master (always, for one Redis).
  };
  std::vector<Node> nodes{};
};

/// Where the limiters' counters live (SPEC §2 `store`): it takes a request's prepared charges
/// and answers how each limiter decided (or, when it fails, what its policy makes of the
/// request), and takes back the concurrency permits of a finished request. The pipeline
/// prepares the charges and concludes the decision; a store only counts. Each event loop calls
/// it from its own thread with its index, so a store can keep per-loop state without locks.
///
/// A store answers at once when it can (charge_now): the memory store always, so that its hot
/// path has no coroutine frame; a shared store when it needs no round trip. Otherwise the
/// caller awaits charge().
class Store {
 public:
  Store() = default;
  Store(const Store&) = delete;
  Store& operator=(const Store&) = delete;
  Store(Store&&) = delete;
  Store& operator=(Store&&) = delete;
  virtual ~Store() = default;

  /// Readies loop `loop` (connections, scripts); on that loop's executor, once, before it serves.
  /// Throws StoreError when the store cannot be used.
  virtual io::Awaitable<void> open(std::size_t /*loop*/) { co_return; }
  /// Lets go of loop `loop`'s resources; from that loop's thread, or once it has stopped.
  virtual void close(std::size_t /*loop*/) {}

  /// Answers without waiting, if it can: true with `result` filled in.
  virtual bool charge_now(std::size_t loop, const pipeline::Decision& decision,
                          const pipeline::Charges& charges, limiter::TimePoint now,
                          pipeline::ChargeResult& result) = 0;
  /// Answers after a round trip, into `result`; only after charge_now() returned false for the
  /// same request and the same `result`. (In place: a result is a kilobyte, and a request that
  /// waits for a round trip should not copy it from frame to frame.)
  virtual io::Awaitable<void> charge(std::size_t loop, const pipeline::Decision& decision,
                                     const pipeline::Charges& charges, limiter::TimePoint now,
                                     pipeline::ChargeResult& result) = 0;
  /// Gives back what loop `loop` holds that other replicas could use (the Redis store's leases),
  /// before the store closes; on that loop's executor, while it runs.
  virtual io::Awaitable<void> give_back(std::size_t /*loop*/) { co_return; }
  /// Gives back the concurrency permits of a finished request, wherever they are held.
  virtual void release(std::size_t loop, const pipeline::Decision& decision) = 0;
  /// Settles a finished request's charges that waited for its response (SPEC §9), wherever
  /// they are counted.
  virtual void settle(std::size_t loop, const pipeline::Decision& decision,
                      const pipeline::ResponseSaid& said, limiter::TimePoint now) = 0;

  // Runtime control (SPEC §10), shared by the replicas of a store outside the process. A store
  // inside the process shares nothing: these do nothing and shares_control() is false. Each may
  // throw StoreError; each runs on loop `loop`'s executor.

  /// Whether the tables below reach the other replicas.
  virtual bool shares_control() const noexcept { return false; }
  /// Sets entry `field` of the shared table `table` ("overrides", "bans") to `value`, or deletes
  /// it (nullopt). Returns whether it was there before.
  virtual io::Awaitable<bool> write_control(std::size_t /*loop*/, std::string_view /*table*/,
                                            std::string_view /*field*/,
                                            std::optional<std::string_view> /*value*/) {
    co_return false;
  }
  /// Every entry of the shared table `table`.
  virtual io::Awaitable<std::vector<std::pair<std::string, std::string>>> read_control(
      std::size_t /*loop*/, std::string_view /*table*/) {
    co_return std::vector<std::pair<std::string, std::string>>{};
  }
  /// Forgets limiter `limiter`'s key `shared_key` (Charges::shared_key) as counted under each
  /// of `definitions`, for every replica: its next request finds a full budget.
  virtual io::Awaitable<void> forget(std::size_t /*loop*/, std::string_view /*limiter*/,
                                     std::span<const limiter::LimiterOptions> /*definitions*/,
                                     limiter::KeyHash /*shared_key*/) {
    co_return;
  }
  /// Takes in the keys other replicas forgot since the last call (what this one remembers of
  /// them, its over-limit caches, goes). Call about twice a second.
  virtual io::Awaitable<void> follow_forgotten(std::size_t /*loop*/) { co_return; }

  /// nullopt for a store inside the process, which has nothing to report.
  virtual std::optional<StoreHealth> health() const { return std::nullopt; }
  /// When the store is unavailable, asks it (from loop `loop`) whether it answers again. For
  /// /readyz: a replica out of rotation gets no requests to notice the store is back with.
  virtual io::Awaitable<void> probe(std::size_t /*loop*/) { co_return; }
};

}  // namespace sluice::store
