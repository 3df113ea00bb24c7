#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "config/proxy_config.hpp"
#include "proxy/io/net.hpp"
#include "proxy/pipeline/pipeline.hpp"
#include "proxy/store/redis/redis_code.hpp"
#include "proxy/store/redis/redis_decision.hpp"
#include "proxy/store/redis/redis_leases.hpp"
#include "proxy/store/redis/redis_nodes.hpp"
#include "proxy/store/store.hpp"

namespace sluice::store::redis {

struct RedisLoop;

/// The limiters' counters in Redis, shared by every replica (SPEC §2 `store: redis`). A request's
/// limiters are decided atomically, with Redis's clock, by decide.lua: a function (FCALL) on
/// Redis 7 and later, a script (EVALSHA) before (RedisCode). Requests that arrive together on one
/// event loop are decided by one call (RedisBatching). Each event loop has its own pipelined
/// connections (`pool` in all, at least one per loop), batches, over-limit cache and counters
/// (RedisLoop); the nodes and their circuit breakers are shared (RedisNodes).
///
/// On a Redis Cluster (`cluster: true`), each loop follows the slot map and sends each request to
/// the master of its keys' slots (ClusterRouting); a request whose limiters live on several
/// masters is charged on each and refunded where another refused it (CrossMasterCharges).
///
/// When Redis fails (timeout, broken connection, error reply), the request follows `on_error`:
/// allow (forwarded, uncounted), deny (503) or local (the memory limiters). The first failure
/// opens the node's breaker: requests then skip Redis, but for one probe every
/// RedisNode::kProbeInterval, until one succeeds. Broken connections, and those that only time
/// out, are replaced in the background (RedisLanes). A decision that timed out may then hold its
/// concurrency permits in Redis until their lease ends, as a crashed replica's would.
///
/// This class is the `Store` seam over those parts: what a request goes through, in order.
class RedisStore final : public Store {
 public:
  RedisStore(config::RedisOptions options, std::size_t loops);
  ~RedisStore() override;

  /// Opens loop `loop`'s connections and loads the code (on a cluster: reads the slot map and
  /// connects to every master); run on that loop's executor, once, before it serves. Throws
  /// RedisError naming the URL (password redacted): Redis refused, the seed is not in cluster
  /// mode, the cluster's slots are not all served.
  io::Awaitable<void> open(std::size_t loop) override;
  /// Closes loop `loop`'s connections; from that loop's thread, or once it has stopped.
  void close(std::size_t loop) override;

  /// Answers at once a request with no charges, one refused by the over-limit cache, one its
  /// leases admit, and one that follows `on_error`: while the breaker is open, or when
  /// RedisBatching::kQueuedBatches are waiting.
  bool charge_now(std::size_t loop, const pipeline::Decision& decision,
                  const pipeline::Charges& charges, limiter::TimePoint now,
                  pipeline::ChargeResult& result) override;
  /// Decides `charges` in Redis, in the loop's open batch; on failure, as `on_error` says. From
  /// loop `loop`'s thread. `now` is the proxy's clock: it serves the over-limit cache, the leases
  /// and `on_error: local`; Redis decides on its own clock.
  io::Awaitable<void> charge(std::size_t loop, const pipeline::Decision& decision,
                             const pipeline::Charges& charges, limiter::TimePoint now,
                             pipeline::ChargeResult& result) override;
  /// Gives back what is left of loop `loop`'s leases (shutdown); on that loop, while it runs.
  io::Awaitable<void> give_back(std::size_t loop) override;
  /// Gives back the concurrency permits of a finished request: in the background when Redis
  /// holds them (PermitReleases), at once when `on_error: local` took them from the memory
  /// limiters.
  void release(std::size_t loop, const pipeline::Decision& decision) override;
  /// Settles a finished request's charges that waited for its response (SPEC §9) in Redis, in
  /// the loop's open batch (one settlement per master), with nobody waiting for the answer:
  /// charged whether they fit or not, or given back what was reserved beyond their cost. While
  /// Redis cannot take them, as `on_error` says: `local` settles them in the memory limiters,
  /// the others lose them (counted, as are those Redis fails).
  void settle(std::size_t loop, const pipeline::Decision& decision,
              const pipeline::ResponseSaid& said, limiter::TimePoint now) override;

  /// Runtime control (SPEC §10): the tables are hashes `{prefix}control:TABLE` (on a cluster,
  /// on their slot's master); a key is forgotten by deleting its counters on its slot's master
  /// and noting it in `{prefix}control:forgotten` (kept a minute), so that every replica's
  /// over-limit caches let it go within follow_forgotten()'s period.
  bool shares_control() const noexcept override { return true; }
  io::Awaitable<bool> write_control(std::size_t loop, std::string_view table,
                                    std::string_view field,
                                    std::optional<std::string_view> value) override;
  io::Awaitable<std::vector<std::pair<std::string, std::string>>> read_control(
      std::size_t loop, std::string_view table) override;
  io::Awaitable<void> forget(std::size_t loop, std::string_view limiter,
                             std::span<const limiter::LimiterOptions> definitions,
                             limiter::KeyHash shared_key) override;
  io::Awaitable<void> follow_forgotten(std::size_t loop) override;

  std::optional<StoreHealth> health() const override;
  /// While a breaker is open, asks Redis (PING on loop `loop`) whether it answers again, and
  /// closes the breaker if it does.
  io::Awaitable<void> probe(std::size_t loop) override;

  /// False while a breaker is open: Redis (on a cluster, a master) is failing, and requests to it
  /// follow on_error.
  bool available() const { return nodes_.available(); }
  /// Whether Redis took decide.lua as a function library (Redis 7 and later), not as scripts.
  bool uses_functions() const noexcept { return code_.uses_functions(); }
  std::uint64_t errors() const noexcept;
  /// Requests refused from the over-limit cache, without a round trip.
  std::uint64_t cached_refusals() const noexcept;
  /// Requests refunded on one master because another refused them (cluster).
  std::uint64_t refunds() const noexcept;
  /// The event loops, of every replica, that hold leases on this store (LeaseHolders); 0 before
  /// this replica leases. Each holds at most one lease per key.
  std::uint64_t lease_holders() const noexcept { return lease_holders_.count(); }
  /// Requests admitted from leases, without a round trip; leases taken.
  std::uint64_t lease_hits() const noexcept;
  std::uint64_t leases_taken() const noexcept;
  /// Settlements of charges after the response that Redis took, and those lost (SPEC §9).
  std::uint64_t settlements() const noexcept;
  std::uint64_t lost_settlements() const noexcept;
  /// The masters loop `loop` sends decisions to (1 on a single Redis).
  std::size_t masters(std::size_t loop) const;
  const config::RedisOptions& options() const noexcept { return options_; }

  /// Decides at a given time instead of Redis's clock: for tests that compare the store with
  /// the memory limiters on a simulated clock.
  void decide_at(std::optional<limiter::TimePoint> now) noexcept { simulated_now_ = now; }

 private:
  /// charge() when some limiter of the request leases: from a lease being taken, with a lease
  /// taken along, or exactly.
  io::Awaitable<void> charge_with_leases(RedisLoop& loop, const pipeline::Decision& decision,
                                         const pipeline::Charges& charges, std::uint64_t permit,
                                         limiter::TimePoint now, pipeline::ChargeResult& result);
  /// The whole request in Redis, routed (one lane, or across masters), into `result`;
  /// `remember`: put refusals in the over-limit cache. One coroutine frame per request when no
  /// limiter leases: this is the store's hot path.
  io::Awaitable<void> charge_in_redis(RedisLoop& loop, const pipeline::Decision& decision,
                                      const pipeline::Charges& charges, std::uint64_t permit,
                                      limiter::TimePoint now, bool remember,
                                      pipeline::ChargeResult& result);
  /// What is left to do once Redis decided: remember refused keys in the over-limit cache.
  void remember_refusals(RedisLoop& loop, const pipeline::Decision& decision,
                         const pipeline::Charges& charges, const pipeline::ChargeResult& result,
                         limiter::TimePoint now);
  /// One command of runtime control on the master that holds `routing_key` (a Redis key), on
  /// loop `loop`'s connections. Throws StoreError when there is no answer.
  io::Awaitable<RespValue> control_command(std::size_t loop, std::string_view routing_key,
                                           std::span<const std::string_view> arguments);
  std::string control_key(std::string_view table) const;
  /// Forgets over-limit ids in every loop's cache (each on its own thread).
  void forget_cached(const std::vector<std::uint64_t>& ids);
  /// A per-loop counter, summed over the loops.
  template <class Counter>
  std::uint64_t summed(Counter counter) const noexcept;

  config::RedisOptions options_;
  std::optional<limiter::TimePoint> simulated_now_;
  RedisNodes nodes_;
  RedisCode code_;
  std::uint64_t permit_base_;  ///< Random, so replicas' permit ids never meet.
  LeaseHolders lease_holders_;
  std::vector<std::unique_ptr<RedisLoop>> loops_;
  /// The newest note of `control:forgotten` taken in (ms since the epoch, Redis's clock).
  std::atomic<long long> forgotten_seen_{0};
};

}  // namespace sluice::store::redis
