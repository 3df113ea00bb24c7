#pragma once

#include <atomic>
#include <boost/asio/awaitable.hpp>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "config/proxy_config.hpp"
#include "proxy/io/net.hpp"
#include "proxy/pipeline/pipeline.hpp"
#include "proxy/store/redis/circuit_breaker.hpp"
#include "proxy/store/redis/cluster_slots.hpp"
#include "proxy/store/redis/decision_batch.hpp"
#include "proxy/store/redis/lease_table.hpp"
#include "proxy/store/redis/over_limit_cache.hpp"
#include "proxy/store/redis/redis_connection.hpp"
#include "proxy/store/redis/redis_decision.hpp"
#include "proxy/store/store.hpp"
#include "proxy/telemetry/metrics.hpp"

namespace sluice::store::redis {

/// The limiters' counters in Redis, shared by every replica (SPEC §2 `store: redis`). A request's
/// limiters are decided atomically, with Redis's clock, by decide.lua: a function (FCALL) on
/// Redis 7 and later, a script (EVALSHA) before. Requests that arrive together on one event loop
/// are decided by one call (a batch): a request opens a batch if none is open, and the batch is
/// sent once the loop has run what was ready at that moment, so a lone request never waits for
/// others. Each event loop has its own pipelined connections (`pool` in all, at least one per
/// loop), batches, over-limit cache and counters; the circuit breaker is shared.
///
/// On a Redis Cluster (`cluster: true`), each loop reads the slot map (CLUSTER SLOTS) from the
/// seed node, keeps connections and batches per master, and sends each request to the master of
/// its keys' slots (the hash tag is the limiter key, so a client's limiters share a slot). A
/// request whose limiters live on several masters is charged on each, and refunded where it was
/// admitted if another master refused it (refund.lua): all or nothing, at the cost of one more
/// round trip for such a refusal; see docs/operations.md. The map is read again when a master does
/// not serve a key's slot (the request is then tried once more), and while a master's connection is
/// down (a failover names a new one).
///
/// When Redis fails (timeout, broken connection, error reply), the request follows `on_error`:
/// allow (forwarded, uncounted), deny (503) or local (the memory limiters). The first failure
/// opens the breaker (one per Redis node: on a cluster, only requests to the failing master
/// skip it): requests then skip Redis, but for one probe every kProbeInterval, until
/// one succeeds. Broken connections reconnect in the background with backoff, and so does one
/// whose last kTimeoutsBeforeReplacing commands all timed out with no reply since (its host may
/// be gone without a word, as after a failover). A decision that timed out on it may then hold
/// its concurrency permits in Redis until their lease ends, as a crashed replica's would.
class RedisStore final : public Store {
 public:
  static constexpr std::chrono::milliseconds kProbeInterval{250};
  static constexpr std::uint32_t kTimeoutsBeforeReplacing = 3;
  /// Requests in one call at most; more make another batch.
  static constexpr std::size_t kMaxBatch = 128;
  /// Calls of decide.lua in flight per loop at most. While they are, arriving requests wait in
  /// the open batch: batches grow with the load, and Redis wakes once per batch, not per
  /// request. A request that finds fewer in flight is sent after one turn of the loop.
  static constexpr std::size_t kCallsInFlight = 8;
  /// Batches waiting for a call in flight to come back, at most, per loop. While Redis hangs
  /// with its connection up, requests beyond kCallsInFlight + kQueuedBatches batches follow
  /// on_error at once (counted as errors) instead of piling up until the timeout.
  static constexpr std::size_t kQueuedBatches = 8;
  /// A cluster's slot map is read again at most this often (per loop), unless a request that
  /// was sent to the wrong master waits for it.
  static constexpr std::chrono::milliseconds kSlotMapInterval{100};

  RedisStore(config::RedisOptions options, std::size_t loops);
  ~RedisStore() override;

  /// Opens loop `loop`'s connections and loads the scripts (on a cluster: reads the slot map and
  /// connects to every master); run on that loop's executor, once, before it serves. Throws
  /// RedisError naming the URL (password redacted): Redis refused, the seed is not in cluster
  /// mode, the cluster's slots are not all served.
  io::Awaitable<void> open(std::size_t loop) override;
  /// Closes loop `loop`'s connections; from that loop's thread, or once it has stopped.
  void close(std::size_t loop) override;

  /// Answers at once a request with no charges, one refused by the over-limit cache, and one
  /// that follows `on_error`: while the breaker is open, or when kQueuedBatches are waiting.
  bool charge_now(std::size_t loop, const pipeline::Decision& decision,
                  const pipeline::Charges& charges, limiter::TimePoint now,
                  pipeline::ChargeResult& result) override;
  /// Decides `charges` in Redis, in the loop's open batch; on failure, as `on_error` says. From
  /// loop `loop`'s thread. `now` is the proxy's clock: it serves the over-limit cache and
  /// `on_error: local`; Redis decides on its own clock.
  io::Awaitable<pipeline::ChargeResult> charge(std::size_t loop, const pipeline::Decision& decision,
                                               const pipeline::Charges& charges,
                                               limiter::TimePoint now) override;
  /// Gives back what is left of loop `loop`'s leases (shutdown); on that loop, while it runs.
  io::Awaitable<void> give_back(std::size_t loop) override;
  /// Gives back the concurrency permits of a finished request: in the background when Redis
  /// holds them (a release that fails is not retried: the permit's lease ends it,
  /// kConcurrencyLease), at once when `on_error: local` took them from the memory limiters.
  void release(std::size_t loop, const pipeline::Decision& decision) override;

  std::optional<StoreHealth> health() const override;
  /// While the breaker is open, asks Redis (PING on loop `loop`) whether it answers again, and
  /// closes the breaker if it does.
  io::Awaitable<void> probe(std::size_t loop) override;

  /// False while a breaker is open: Redis (on a cluster, a master) is failing, and requests to it
  /// follow on_error.
  bool available() const;
  /// Whether Redis took decide.lua as a function library (Redis 7 and later), not as scripts.
  bool uses_functions() const noexcept { return functions_; }
  std::uint64_t errors() const noexcept;
  /// Requests refused from the over-limit cache, without a round trip.
  std::uint64_t cached_refusals() const noexcept;
  /// Requests refunded on one master because another refused them (cluster).
  std::uint64_t refunds() const noexcept;
  /// The event loops, of every replica, that hold leases on this store, as they count themselves
  /// in it (a replica, once it leases, keeps a heartbeat for each of its loops in
  /// `{prefix}lease-holders`); 0 before this replica leases. Each holds at most one lease per key.
  std::uint64_t lease_holders() const noexcept {
    return lease_holders_.load(std::memory_order_relaxed);
  }
  static constexpr std::chrono::seconds kHeartbeat{1};
  /// Requests admitted from leases, without a round trip; leases taken.
  std::uint64_t lease_hits() const noexcept;
  std::uint64_t leases_taken() const noexcept;
  /// The masters loop `loop` sends decisions to (1 on a single Redis).
  std::size_t masters(std::size_t loop) const;
  const config::RedisOptions& options() const noexcept { return options_; }

  /// Decides at a given time instead of Redis's clock: for tests that compare the store with
  /// the memory limiters on a simulated clock.
  void decide_at(std::optional<limiter::TimePoint> now) noexcept { simulated_now_ = now; }

 private:
  struct Node;
  struct Lane;
  struct Loop;
  using Batch = DecisionBatch;
  /// Per charge of a request, the index of its master's lane in its loop.
  using LaneIndices = std::array<std::uint16_t, limiter::kMaxChargesPerRequest>;
  /// Redis's answer for a request, with the time each charge was decided at (µs, Redis's).
  struct Decided {
    pipeline::ChargeResult result;
    std::array<std::int64_t, limiter::kMaxChargesPerRequest> decided_at{};
  };
  /// Per charge, its key's redis_key_id().
  using KeyIds = std::array<std::uint64_t, limiter::kMaxChargesPerRequest>;
  /// Per charge, the permits of a lease it takes with the request (0: none).
  using TopUps = std::array<limiter::Permits, limiter::kMaxChargesPerRequest>;

  KeyLayout layout() const noexcept { return {options_.prefix, options_.cluster}; }
  /// A per-loop counter, summed over the loops.
  std::uint64_t summed(telemetry::LoopCounter Loop::*counter) const noexcept;
  /// The node of `address` (cluster), made on first use; its address is the Redis's identity.
  Node& node_at(const std::string& address);
  io::Awaitable<std::shared_ptr<RedisConnection>> connect(Node& node);
  io::Awaitable<void> reconnect(Loop& loop, Lane& lane, std::size_t slot);
  /// A working connection of the lane, round robin; nullptr when all are reconnecting.
  RedisConnection* pick(Loop& loop, Lane& lane);
  /// Drops a broken connection and reconnects its slot in the background.
  void replace(Loop& loop, Lane& lane, std::size_t slot);
  limiter::Duration connect_timeout() const noexcept;

  /// Cluster: reads the slot map from `connection` (nullopt, with `why`, when it cannot).
  io::Awaitable<std::optional<SlotMap>> read_slots(RedisConnection& connection, std::string& why);
  /// Cluster: makes the loop's lanes follow `map`: new masters get a lane (connected in the
  /// background unless `connect_now`), masters no longer in it stop being served.
  io::Awaitable<void> follow(Loop& loop, const SlotMap& map, bool connect_now);
  /// Cluster: reads the slot map again (from any node that answers) and follows it; at most every
  /// kSlotMapInterval. A call while one is under way waits for it.
  io::Awaitable<void> refresh_slots(Loop& loop);
  /// Which lane each of `charges` goes to; false when a slot has no master.
  bool route(const Loop& loop, const pipeline::Charges& charges, LaneIndices& lanes) const;

  /// The lane's open batch, or a new one, sent once the loop has run what is ready now.
  Batch& open_batch(Loop& loop, Lane& lane, const io::Executor& executor);
  /// Adds `waiter` to the lane's open batch and waits for the batch's answer.
  io::Awaitable<void> wait_in_batch(Loop& loop, Lane& lane, BatchWaiter& waiter);
  /// Sends the lane's queued batches one after the other, after a turn of the loop, and wakes
  /// each one's waiters with their answers.
  io::Awaitable<void> send_batches(Loop& loop, Lane& lane);
  /// One call of decide.lua for `batch`; false when Redis failed.
  io::Awaitable<bool> call(Loop& loop, Lane& lane, Batch& batch);
  /// The whole request in Redis, routed (one lane, or charge_across); `remember`: put refusals in
  /// the over-limit cache.
  io::Awaitable<Decided> charge_in_redis(Loop& loop, const pipeline::Decision& decision,
                                         const pipeline::Charges& charges, std::uint64_t permit,
                                         limiter::TimePoint now, bool remember);
  /// Cluster: a request whose charges go to several lanes, charged on each, then refunded where
  /// it was admitted if another lane refused it.
  io::Awaitable<Decided> charge_across(Loop& loop, const pipeline::Decision& decision,
                                       const pipeline::Charges& charges, const LaneIndices& lanes,
                                       std::uint64_t permit, limiter::TimePoint now);
  /// One part of charge_across(): waits in its lane's batch, then counts itself done.
  io::Awaitable<void> decide_part(Loop& loop, Lane& lane, BatchWaiter& waiter, std::size_t& pending,
                                  io::Timer& done);
  /// Sends one call of refund.lua on `lane`, waits for it, and reads the refunded charges'
  /// statuses into `result`.
  io::Awaitable<void> refund(Loop& loop, Lane& lane, RefundCall call,
                             pipeline::ChargeResult& result);
  /// Leases: admits a request from its limiters' leases if every one of them leases and holds
  /// room; false when it must go to Redis.
  bool answer_from_leases(Loop& loop, const pipeline::Decision& decision,
                          const pipeline::Charges& charges, const KeyIds& ids,
                          limiter::TimePoint now, pipeline::ChargeResult& result);
  /// Leases: whether every limiter of a request leases, and holds room or has a lease being
  /// taken (at least one): then the request waits for that lease rather than ask Redis.
  bool waits_for_lease(Loop& loop, const pipeline::Decision& decision,
                       const pipeline::Charges& charges, limiter::TimePoint now);
  /// Leases: which leased limiters of a request take a new lease with it (their lease is out),
  /// and `topped`, the charges with those leases added to their costs. False when none does.
  bool top_ups(Loop& loop, const pipeline::Decision& decision, const pipeline::Charges& charges,
               limiter::TimePoint now, pipeline::Charges& topped, TopUps& added);
  /// Leases: records the leases a request took, if Redis admitted it with them; either way,
  /// lets the next request take a lease of those keys.
  void grant(Loop& loop, const pipeline::Decision& decision, const pipeline::Charges& charges,
             const TopUps& added, Decided& decided, limiter::TimePoint now);
  /// Gives back what is left of `lease` (refund.lua), in the background; empties it.
  void give_back(Loop& loop, LeaseTable::Lease& lease);
  io::Awaitable<void> run_refund(std::shared_ptr<RedisConnection> connection,
                                 std::vector<std::string> command);
  /// Leases: counts this replica's loops in Redis every kHeartbeat, and reads how many hold
  /// leases in all.
  io::Awaitable<void> heartbeat(Loop& loop);
  /// What is left to do once Redis decided: remember refused keys in the over-limit cache.
  void remember_refusals(Loop& loop, const pipeline::Decision& decision,
                         const pipeline::Charges& charges, const pipeline::ChargeResult& result,
                         limiter::TimePoint now);

  /// Loads decide.lua and release.lua on `connection`: as a function library, or as scripts
  /// where Redis has no functions. False, with the reason in `why`, when Redis refused.
  io::Awaitable<bool> load_code(RedisConnection& connection, limiter::Duration timeout,
                                std::string& why);
  /// The command and its target (function name or SHA1) that run decide.lua or release.lua.
  std::pair<std::string_view, std::string_view> decide_command() const noexcept;
  std::pair<std::string_view, std::string_view> release_command() const noexcept;
  /// The concurrency permits `charges` take, as a finished request gives them back.
  static std::vector<pipeline::Permit> permits_of(const pipeline::Decision& decision,
                                                  const pipeline::Charges& charges);
  /// Gives back `permits` held under `id`, in the background, each on its key's lane.
  void send_releases(Loop& loop, const std::vector<pipeline::Permit>& permits, std::uint64_t id);
  io::Awaitable<void> run_releases(std::shared_ptr<RedisConnection> connection,
                                   std::vector<ReleaseCall> releases);
  /// `requests` requests could not be decided by the lane's Redis.
  void failed(Loop& loop, Lane& lane, std::string_view why, std::size_t requests = 1);
  /// What `on_error` makes of a request Redis could not decide.
  pipeline::ChargeResult fall_back(const pipeline::Charges& charges, limiter::TimePoint now) const;
  /// The keys of the charges, as the over-limit cache and the leases know them.
  static KeyIds cache_ids(const pipeline::Decision& decision, const pipeline::Charges& charges);

  config::RedisOptions options_;
  std::string shown_url_;  ///< The URL with its password redacted.
  std::vector<std::unique_ptr<Loop>> loops_;
  /// The Redis nodes, shared by the loops: one on a single Redis, the masters met on a cluster.
  /// A deque, so that the loops' references stay valid as nodes are added.
  mutable std::mutex nodes_mutex_;
  std::deque<Node> nodes_;
  /// Set by every load: the loops' connections all lead to one Redis (or cluster).
  std::atomic<bool> functions_{true};
  std::uint64_t permit_base_;  ///< Random, so replicas' permit ids never meet.
  std::atomic<std::uint64_t> lease_holders_{0};
  std::atomic<bool> heartbeat_started_{false};
  std::optional<limiter::TimePoint> simulated_now_;
};

}  // namespace sluice::store::redis
