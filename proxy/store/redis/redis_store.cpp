#include "proxy/store/redis/redis_store.hpp"

#include <spdlog/spdlog.h>

#include <array>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/steady_timer.hpp>
#include <random>

#include "config/url.hpp"
#include "limiter/key_hash.hpp"
#include "proxy/io/net.hpp"
#include "proxy/store/redis/decision_batch.hpp"
#include "proxy/store/redis/redis_scripts.hpp"

namespace sluice::store::redis {
namespace {

/// Backoff between reconnection attempts: doubling, capped so that a Redis that comes back is
/// found again within a second.
constexpr std::chrono::milliseconds kFirstBackoff{50};
constexpr std::chrono::milliseconds kMaxBackoff{400};

/// Connecting and loading the scripts may take longer than a decision.
constexpr limiter::Duration kMinConnectTimeout = std::chrono::seconds(1);

std::string reason(const RedisReply& reply) {
  if (reply.error) {
    return reply.error == beast::error::timeout ? std::string("timed out") : reply.error.message();
  }
  return reply.value.is_error() ? reply.value.text : std::string("unexpected reply");
}

/// Loads of the code one call may make before it gives up: another flush may land between a load
/// and the call it was for.
constexpr int kCodeReloads = 2;

/// Whether an error reply says Redis has forgotten the code (SCRIPT FLUSH, FUNCTION FLUSH, a
/// failover to a node that never had it).
bool code_missing(std::string_view error) {
  return error.starts_with("NOSCRIPT") || error.find("Function not found") != error.npos;
}

/// Whether an error reply says Redis has no functions (before 7): scripts are used instead.
bool no_functions(std::string_view error) { return error.find("unknown command") != error.npos; }

}  // namespace

struct RedisStore::Loop {
  std::vector<std::shared_ptr<RedisConnection>> connections;  ///< nullptr while reconnecting.
  std::size_t next = 0;
  DecisionBatch* open = nullptr;  ///< Takes the requests that arrive until it is sent.
  /// Waiting to be sent, oldest first; `open` is the last. At most kQueuedBatches.
  std::vector<DecisionBatch*> queued;
  std::size_t senders = 0;  ///< Coroutines sending batches, one call each: kCallsInFlight at most.
  std::vector<std::unique_ptr<DecisionBatch>> batches;  ///< Every batch made, queued or spare.
  std::vector<DecisionBatch*> spare;
  OverLimitCache over_limit;
  std::uint64_t permits_issued = 0;
  telemetry::LoopCounter errors;
  telemetry::LoopCounter cached_refusals;
  telemetry::LoopCounter calls;              ///< Calls of decide.lua sent.
  telemetry::LoopCounter requests_in_calls;  ///< Requests they carried.
  bool closed = false;
};

RedisStore::RedisStore(config::RedisOptions options, std::size_t loops)
    : options_(std::move(options)), shown_url_(config::redact_url(options_.url)) {
  const std::size_t per_loop =
      std::max<std::size_t>(1, options_.pool / std::max<std::size_t>(loops, 1));
  for (std::size_t i = 0; i < loops; ++i) {
    auto& loop = loops_.emplace_back(std::make_unique<Loop>());
    loop->connections.resize(per_loop +
                             (i < options_.pool % loops && options_.pool > loops ? 1 : 0));
  }
  std::random_device random;
  permit_base_ = (std::uint64_t{random()} << 32) ^ random();
}

RedisStore::~RedisStore() = default;

limiter::Duration RedisStore::connect_timeout() const noexcept {
  return std::max(options_.timeout, kMinConnectTimeout);
}

io::Awaitable<std::shared_ptr<RedisConnection>> RedisStore::connect() {
  auto connection =
      co_await RedisConnection::open(options_.endpoint, options_.url, connect_timeout());
  // On every connection: a Redis that restarted has forgotten the code.
  std::string why;
  if (!co_await load_code(*connection, connect_timeout(), why)) {
    connection->close();
    throw RedisError("Redis at " + shown_url_ + ": loading the decision code failed: " + why);
  }
  co_return connection;
}

io::Awaitable<bool> RedisStore::load_code(RedisConnection& connection, limiter::Duration timeout,
                                          std::string& why) {
  const std::array<std::string_view, 4> function_load{"FUNCTION", "LOAD", "REPLACE", library()};
  const RedisReply loaded = co_await connection.command(function_load, timeout);
  if (!loaded.error && !loaded.value.is_error()) {
    functions_ = true;
    co_return true;
  }
  if (loaded.error || !no_functions(loaded.value.text)) {
    why = reason(loaded);
    co_return false;
  }
  for (const std::string_view script : {decide_script(), release_script()}) {
    const std::array<std::string_view, 3> script_load{"SCRIPT", "LOAD", script};
    const RedisReply reply = co_await connection.command(script_load, timeout);
    if (reply.error || reply.value.is_error()) {
      why = reason(reply);
      co_return false;
    }
  }
  functions_ = false;
  co_return true;
}

std::pair<std::string_view, std::string_view> RedisStore::decide_command() const noexcept {
  return functions_ ? std::pair{std::string_view("FCALL"), decide_function()}
                    : std::pair{std::string_view("EVALSHA"), decide_sha()};
}

std::pair<std::string_view, std::string_view> RedisStore::release_command() const noexcept {
  return functions_ ? std::pair{std::string_view("FCALL"), release_function()}
                    : std::pair{std::string_view("EVALSHA"), release_sha()};
}

io::Awaitable<void> RedisStore::open(std::size_t index) {
  Loop& loop = *loops_[index];
  for (auto& connection : loop.connections) {
    connection = co_await connect();
  }
}

void RedisStore::close(std::size_t index) {
  Loop& loop = *loops_[index];
  loop.closed = true;
  for (auto& connection : loop.connections) {
    if (connection) {
      connection->close();
      connection.reset();
    }
  }
}

RedisConnection* RedisStore::pick(Loop& loop) {
  const std::size_t count = loop.connections.size();
  for (std::size_t tried = 0; tried < count; ++tried) {
    const std::size_t slot = loop.next++ % count;
    const auto& connection = loop.connections[slot];
    if (connection && !connection->broken()) {
      return connection.get();
    }
    if (connection) {
      replace(loop, slot);
    }
  }
  return nullptr;
}

void RedisStore::replace(Loop& loop, std::size_t slot) {
  auto& connection = loop.connections[slot];
  const auto executor = connection->get_executor();
  connection->close();
  connection.reset();
  net::co_spawn(executor, reconnect(loop, slot), net::detached);
}

io::Awaitable<void> RedisStore::reconnect(Loop& loop, std::size_t slot) {
  auto backoff = std::chrono::milliseconds(kFirstBackoff);
  io::Timer timer(co_await net::this_coro::executor);
  while (!loop.closed) {
    try {
      auto connection = co_await connect();
      if (loop.closed) {
        connection->close();
      } else {
        loop.connections[slot] = std::move(connection);
      }
      co_return;
    } catch (const std::exception&) {
      // Still down (RedisError), or the socket refused an option: try again later.
    }
    timer.expires_after(backoff);
    co_await timer.async_wait(io::use_nothrow);
    backoff = std::min(backoff * 2, std::chrono::milliseconds(kMaxBackoff));
  }
}

void RedisStore::failed(Loop& loop, std::string_view why, std::size_t requests) {
  loop.errors.add(requests);
  if (breaker_.failed(CircuitBreaker::Clock::now())) {
    spdlog::warn("Redis store at {} failed ({}); requests follow on_error: {}", shown_url_, why,
                 name_of(options_.on_error));
  }
}

RedisStore::Batch& RedisStore::open_batch(Loop& loop, const io::Executor& executor) {
  if (loop.open != nullptr) {
    return *loop.open;
  }
  if (loop.spare.empty()) {
    loop.spare.push_back(loop.batches.emplace_back(std::make_unique<Batch>(executor)).get());
  }
  loop.open = loop.spare.back();
  loop.spare.pop_back();
  loop.queued.push_back(loop.open);
  if (loop.senders < kCallsInFlight) {
    ++loop.senders;
    net::co_spawn(executor, send_batches(loop), net::detached);
  }
  return *loop.open;
}

io::Awaitable<void> RedisStore::send_batches(Loop& loop) {
  // Let the loop run what is ready first: the requests it holds join the batch.
  co_await net::post(co_await net::this_coro::executor, io::use_awaitable);
  while (!loop.queued.empty()) {
    Batch& batch = *loop.queued.front();
    loop.queued.erase(loop.queued.begin());
    if (loop.open == &batch) {
      loop.open = nullptr;
    }
    co_await call(loop, batch);
    batch.wake();
    loop.spare.push_back(&batch);
  }
  --loop.senders;
}

io::Awaitable<bool> RedisStore::call(Loop& loop, Batch& batch) {
  for (int attempt = 0; attempt <= kCodeReloads; ++attempt) {
    RedisConnection* picked = pick(loop);
    if (picked == nullptr) {
      failed(loop, "no connection", batch.size());
      co_return false;
    }
    const std::shared_ptr<RedisConnection> connection = picked->shared_from_this();
    const std::uint64_t ticket = breaker_.ticket();
    const auto [command, target] = decide_command();
    loop.calls.add();
    loop.requests_in_calls.add(batch.size());
    const RedisReply reply = co_await connection->command(
        batch.arguments(command, target, simulated_now_), options_.timeout, batch);
    if (!reply.error && code_missing(batch.failure())) {
      // The code was flushed (SCRIPT or FUNCTION FLUSH, a failover): load it again.
      std::string why;
      if (attempt < kCodeReloads && co_await load_code(*connection, options_.timeout, why)) {
        continue;
      }
    }
    if (!reply.error && batch.failure().empty()) {
      if (breaker_.succeeded(ticket)) {
        spdlog::info("Redis store at {} answers again", shown_url_);
      }
      co_return true;
    }
    if (reply.error == beast::error::timeout) {
      // Redis may still run the call when it wakes up: give back the concurrency permits it
      // would take. On the same connection, so after the call; harmless if it never ran.
      for (const BatchWaiter* waiter : batch.waiters()) {
        send_releases(*connection, permits_of(waiter->decision, waiter->charges), waiter->permit);
      }
    }
    const bool backed_up = reply.error == boost::system::errc::no_buffer_space;
    if ((reply.error && reply.error != beast::error::timeout && !backed_up) ||
        connection->timeouts_in_a_row() >= kTimeoutsBeforeReplacing) {
      for (std::size_t slot = 0; slot < loop.connections.size(); ++slot) {
        if (loop.connections[slot] == connection) {
          replace(loop, slot);  // the connection broke, or leads nowhere
        }
      }
    }
    std::size_t undecided = 0;
    for (const BatchWaiter* waiter : batch.waiters()) {
      undecided += waiter->decided ? 0 : 1;
    }
    failed(loop, reply.error ? reason(reply) : batch.failure(), undecided);
    co_return false;
  }
  co_return false;
}

std::vector<pipeline::Permit> RedisStore::permits_of(const pipeline::Decision& decision,
                                                     const pipeline::Charges& charges) {
  std::vector<pipeline::Permit> permits;
  for (std::size_t i = 0; i < charges.count; ++i) {
    if (charges.options[i]->algorithm == limiter::AlgorithmKind::concurrency) {
      const limiter::Charge& charge = charges.items[i];
      permits.push_back({charge.limiter, charge.key, charge.cost, charges.shared_key[i],
                         decision.reports[charges.report[i]].limiter, charges.options[i]});
    }
  }
  return permits;
}

void RedisStore::send_releases(RedisConnection& connection,
                               const std::vector<pipeline::Permit>& permits, std::uint64_t id) {
  if (permits.empty()) {
    return;
  }
  std::vector<ReleaseCall> calls;
  for (const pipeline::Permit& permit : permits) {
    calls.push_back(release_call(options_.prefix, permit, id));
  }
  net::co_spawn(connection.get_executor(),
                run_releases(connection.shared_from_this(), std::move(calls)), net::detached);
}

// A member, not a lambda: a coroutine lambda's captures live in the closure, which is gone
// once co_spawn has been called; a member function's frame keeps `this` itself.
io::Awaitable<void> RedisStore::run_releases(std::shared_ptr<RedisConnection> connection,
                                             std::vector<ReleaseCall> releases) {
  for (const ReleaseCall& call : releases) {
    const auto [command, target] = release_command();
    const std::array<std::string_view, 6> arguments{command,  target,      "1",
                                                    call.key, call.permit, call.cost};
    RedisReply reply = co_await connection->command(arguments, options_.timeout);
    std::string why;
    if (!reply.error && reply.value.is_error() && code_missing(reply.value.text) &&
        co_await load_code(*connection, options_.timeout, why)) {
      const auto [reloaded_command, reloaded_target] = release_command();
      const std::array<std::string_view, 6> again{reloaded_command, reloaded_target, "1",
                                                  call.key,         call.permit,     call.cost};
      co_await connection->command(again, options_.timeout);
    }
  }
}

io::Awaitable<void> RedisStore::probe(std::size_t index) {
  Loop& loop = *loops_[index];
  RedisConnection* picked = breaker_.is_open() ? pick(loop) : nullptr;
  if (picked == nullptr) {
    co_return;
  }
  const std::shared_ptr<RedisConnection> connection = picked->shared_from_this();
  const std::array<std::string_view, 1> ping{"PING"};
  const std::uint64_t ticket = breaker_.ticket();
  const RedisReply pong = co_await connection->command(ping, options_.timeout);
  if (!pong.error && !pong.value.is_error() && breaker_.succeeded(ticket)) {
    spdlog::info("Redis store at {} answers again", shown_url_);
  }
}

pipeline::ChargeResult RedisStore::fall_back(const pipeline::Charges& charges,
                                             limiter::TimePoint now) const {
  switch (options_.on_error) {
    case config::OnStoreError::local:
      return pipeline::Pipeline::charge_locally(charges, now);
    case config::OnStoreError::allow: {
      pipeline::ChargeResult result;
      result.counted = pipeline::Counted::let_pass;
      return result;
    }
    case config::OnStoreError::deny:
      break;
  }
  pipeline::ChargeResult result;
  result.counted = pipeline::Counted::refuse;
  return result;
}

std::array<std::uint64_t, limiter::kMaxChargesPerRequest> RedisStore::cache_ids(
    const pipeline::Decision& decision, const pipeline::Charges& charges) {
  std::array<std::uint64_t, limiter::kMaxChargesPerRequest> ids{};
  for (std::size_t i = 0; i < charges.live; ++i) {
    ids[i] = redis_key_id(decision.reports[charges.report[i]].limiter->name, *charges.options[i],
                          charges.shared_key[i]);
  }
  return ids;
}

bool RedisStore::charge_now(std::size_t index, const pipeline::Decision& decision,
                            const pipeline::Charges& charges, limiter::TimePoint now,
                            pipeline::ChargeResult& result) {
  Loop& loop = *loops_[index];
  if (charges.count == 0) {
    result = pipeline::Pipeline::charge_locally(charges, now);
    return true;
  }
  // Keys known to be over their limit are refused here, without a round trip.
  const auto ids = cache_ids(decision, charges);
  const limiter::TimePoint cache_now = simulated_now_.value_or(now);
  result = pipeline::ChargeResult{};
  bool cached = false;
  for (std::size_t i = 0; i < charges.live; ++i) {
    const auto refusal = loop.over_limit.refusal(ids[i], charges.items[i].cost, cache_now);
    if (refusal) {
      cached = true;
      result.outcomes[i] = *refusal;
    } else {
      result.outcomes[i].verdict.admitted = true;
    }
  }
  if (cached) {
    loop.cached_refusals.add();
    return true;
  }
  if (!breaker_.allow(CircuitBreaker::Clock::now())) {
    result = fall_back(charges, now);
    return true;
  }
  if (loop.open == nullptr && loop.queued.size() >= kQueuedBatches) {
    loop.errors.add();  // Redis is not keeping up: no room to wait
    result = fall_back(charges, now);
    return true;
  }
  return false;
}

io::Awaitable<pipeline::ChargeResult> RedisStore::charge(std::size_t index,
                                                         const pipeline::Decision& decision,
                                                         const pipeline::Charges& charges,
                                                         limiter::TimePoint now) {
  Loop& loop = *loops_[index];
  // Unique per request: the process's random base, a count per loop, the loop.
  BatchWaiter waiter{.decision = decision,
                     .charges = charges,
                     .permit = permit_base_ + (++loop.permits_issued << 16) + index};
  Batch& batch = open_batch(loop, co_await net::this_coro::executor);
  batch.add(options_.prefix, waiter);
  if (batch.size() >= kMaxBatch) {
    loop.open = nullptr;  // full: the next request opens another
  }
  co_await batch.wait();
  if (!waiter.decided) {
    co_return fall_back(charges, now);
  }
  pipeline::ChargeResult& result = waiter.result;
  result.store_permit = waiter.permit;
  if (!result.live_admitted) {
    const auto ids = cache_ids(decision, charges);
    const limiter::TimePoint cache_now = simulated_now_.value_or(now);
    for (std::size_t i = 0; i < charges.live; ++i) {
      const limiter::Verdict& verdict = result.outcomes[i].verdict;
      if (!verdict.admitted && verdict.retry_after != limiter::Duration::max() &&
          charges.options[i]->algorithm != limiter::AlgorithmKind::concurrency) {
        loop.over_limit.remember(ids[i], charges.items[i].cost, cache_now, result.outcomes[i]);
      }
    }
  }
  co_return result;
}

void RedisStore::release(std::size_t index, const pipeline::Decision& decision) {
  if (decision.permit_count == 0) {
    return;
  }
  if (decision.store_permit == 0) {
    pipeline::Pipeline::release_locally(decision);  // `on_error: local` took them from memory
    return;
  }
  RedisConnection* connection = pick(*loops_[index]);
  if (connection == nullptr) {
    return;  // the lease will end the permits
  }
  send_releases(*connection,
                {decision.permits.begin(),
                 decision.permits.begin() + static_cast<std::ptrdiff_t>(decision.permit_count)},
                decision.store_permit);
}

std::optional<StoreHealth> RedisStore::health() const {
  StoreHealth health{.name = "redis",
                     .available = available(),
                     .errors = errors(),
                     .cached_refusals = cached_refusals()};
  for (const auto& loop : loops_) {
    health.calls += loop->calls.value();
    health.requests_in_calls += loop->requests_in_calls.value();
  }
  return health;
}

std::uint64_t RedisStore::errors() const noexcept {
  std::uint64_t total = 0;
  for (const auto& loop : loops_) {
    total += loop->errors.value();
  }
  return total;
}

std::uint64_t RedisStore::cached_refusals() const noexcept {
  std::uint64_t total = 0;
  for (const auto& loop : loops_) {
    total += loop->cached_refusals.value();
  }
  return total;
}

}  // namespace sluice::store::redis
