#pragma once

#include <atomic>
#include <boost/asio/awaitable.hpp>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "config/proxy_config.hpp"
#include "proxy/io/net.hpp"
#include "proxy/pipeline/pipeline.hpp"
#include "proxy/store/redis/circuit_breaker.hpp"
#include "proxy/store/redis/decision_batch.hpp"
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
/// When Redis fails (timeout, broken connection, error reply), the request follows `on_error`:
/// allow (forwarded, uncounted), deny (503) or local (the memory limiters). The first failure
/// opens the breaker: requests then skip Redis, but for one probe every kProbeInterval, until
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

  RedisStore(config::RedisOptions options, std::size_t loops);
  ~RedisStore() override;

  /// Opens loop `loop`'s connections and loads the scripts; run on that loop's executor, once,
  /// before it serves. Throws RedisError naming the URL (password redacted).
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
  /// Gives back the concurrency permits of a finished request: in the background when Redis
  /// holds them (a release that fails is not retried: the permit's lease ends it,
  /// kConcurrencyLease), at once when `on_error: local` took them from the memory limiters.
  void release(std::size_t loop, const pipeline::Decision& decision) override;

  std::optional<StoreHealth> health() const override;
  /// While the breaker is open, asks Redis (PING on loop `loop`) whether it answers again, and
  /// closes the breaker if it does.
  io::Awaitable<void> probe(std::size_t loop) override;

  /// False while the breaker is open: Redis is failing, requests follow on_error.
  bool available() const noexcept { return !breaker_.is_open(); }
  /// Whether Redis took decide.lua as a function library (Redis 7 and later), not as scripts.
  bool uses_functions() const noexcept { return functions_; }
  std::uint64_t errors() const noexcept;
  /// Requests refused from the over-limit cache, without a round trip.
  std::uint64_t cached_refusals() const noexcept;
  const config::RedisOptions& options() const noexcept { return options_; }

  /// Decides at a given time instead of Redis's clock: for tests that compare the store with
  /// the memory limiters on a simulated clock.
  void decide_at(std::optional<limiter::TimePoint> now) noexcept { simulated_now_ = now; }

 private:
  struct Loop;
  using Batch = DecisionBatch;

  /// The loop's open batch, or a new one, sent once the loop has run what is ready now.
  Batch& open_batch(Loop& loop, const io::Executor& executor);
  /// Sends the loop's queued batches one after the other, after a turn of the loop, and wakes
  /// each one's waiters with their answers.
  io::Awaitable<void> send_batches(Loop& loop);
  /// One call of decide.lua for `batch`; false when Redis failed.
  io::Awaitable<bool> call(Loop& loop, Batch& batch);
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
  /// Gives back `permits` held under `id`, in the background, on `connection`.
  void send_releases(RedisConnection& connection, const std::vector<pipeline::Permit>& permits,
                     std::uint64_t id);
  io::Awaitable<void> run_releases(std::shared_ptr<RedisConnection> connection,
                                   std::vector<ReleaseCall> releases);
  io::Awaitable<std::shared_ptr<RedisConnection>> connect();
  io::Awaitable<void> reconnect(Loop& loop, std::size_t slot);
  /// A working connection of the loop, round robin; nullptr when all are reconnecting.
  RedisConnection* pick(Loop& loop);
  /// Drops a broken connection and reconnects its slot in the background.
  void replace(Loop& loop, std::size_t slot);
  limiter::Duration connect_timeout() const noexcept;
  /// `requests` requests could not be decided in Redis.
  void failed(Loop& loop, std::string_view why, std::size_t requests = 1);
  /// What `on_error` makes of a request Redis could not decide.
  pipeline::ChargeResult fall_back(const pipeline::Charges& charges, limiter::TimePoint now) const;
  /// The keys of the live charges, as the over-limit cache knows them.
  static std::array<std::uint64_t, limiter::kMaxChargesPerRequest> cache_ids(
      const pipeline::Decision& decision, const pipeline::Charges& charges);

  config::RedisOptions options_;
  std::string shown_url_;  ///< The URL with its password redacted.
  std::vector<std::unique_ptr<Loop>> loops_;
  CircuitBreaker breaker_{kProbeInterval};
  /// Set by every load: the loops' connections all lead to one Redis.
  std::atomic<bool> functions_{true};
  std::uint64_t permit_base_;  ///< Random, so replicas' permit ids never meet.
  std::optional<limiter::TimePoint> simulated_now_;
};

}  // namespace sluice::store::redis
