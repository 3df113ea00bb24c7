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

}  // namespace

struct RedisStore::Loop {
  std::vector<std::shared_ptr<RedisConnection>> connections;  ///< nullptr while reconnecting.
  std::size_t next = 0;
  DecisionCall call;
  OverLimitCache over_limit;
  std::uint64_t permits_issued = 0;
  telemetry::LoopCounter errors;
  telemetry::LoopCounter cached_refusals;
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
  // SCRIPT LOAD on every connection: a Redis that restarted has forgotten them.
  for (auto [script, sha] :
       {std::pair{decide_script(), &decide_sha_}, std::pair{release_script(), &release_sha_}}) {
    const std::array<std::string_view, 3> load{"SCRIPT", "LOAD", script};
    const RedisReply loaded = co_await connection->command(load, connect_timeout());
    if (loaded.error || loaded.value.kind != RespValue::Kind::bulk) {
      connection->close();
      throw RedisError("Redis at " + shown_url_ + ": SCRIPT LOAD failed: " + reason(loaded));
    }
    // A script's SHA1 never changes: it is kept from the first connection, opened before the
    // loops run, and only read afterwards (reconnections run on every loop at once).
    if (sha->empty()) {
      *sha = loaded.value.text;
    }
  }
  co_return connection;
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

void RedisStore::failed(Loop& loop, std::string_view why) {
  loop.errors.add();
  if (breaker_.failed(CircuitBreaker::Clock::now())) {
    spdlog::warn("Redis store at {} failed ({}); requests follow on_error: {}", shown_url_, why,
                 name_of(options_.on_error));
  }
}

io::Awaitable<bool> RedisStore::load_scripts(RedisConnection& connection) {
  for (const std::string_view script : {decide_script(), release_script()}) {
    const std::array<std::string_view, 3> load{"SCRIPT", "LOAD", script};
    const RedisReply loaded = co_await connection.command(load, options_.timeout);
    if (loaded.error || loaded.value.is_error()) {
      co_return false;
    }
  }
  co_return true;
}

io::Awaitable<bool> RedisStore::call(Loop& loop, const pipeline::Decision& decision,
                                     const pipeline::Charges& charges, std::uint64_t permit,
                                     pipeline::ChargeResult& result) {
  for (int attempt = 0; attempt < 2; ++attempt) {
    RedisConnection* picked = pick(loop);
    if (picked == nullptr) {
      failed(loop, "no connection");
      co_return false;
    }
    const std::shared_ptr<RedisConnection> connection = picked->shared_from_this();
    const std::uint64_t ticket = breaker_.ticket();
    // The loop's call buffer serves all its requests: it is built right before it is sent
    // (command() copies it out before it first waits), and never read after a wait.
    loop.call.build(decide_sha_, options_.prefix, decision, charges, permit, simulated_now_);
    const RedisReply reply = co_await connection->command(loop.call.arguments(), options_.timeout);
    if (!reply.error && reply.value.is_error() && reply.value.text.starts_with("NOSCRIPT")) {
      // The scripts were flushed (SCRIPT FLUSH, a failover): load both again, once.
      if (attempt == 0 && co_await load_scripts(*connection)) {
        continue;
      }
    }
    if (!reply.error && read_decision(reply.value, charges, result)) {
      if (breaker_.succeeded(ticket)) {
        spdlog::info("Redis store at {} answers again", shown_url_);
      }
      co_return true;
    }
    if (reply.error == beast::error::timeout) {
      // Redis may still run the script when it wakes up: give back the concurrency permits it
      // would take. On the same connection, so after the script; harmless if it never ran.
      send_releases(*connection, permits_of(decision, charges), permit);
    }
    if ((reply.error && reply.error != beast::error::timeout) ||
        connection->timeouts_in_a_row() >= kTimeoutsBeforeReplacing) {
      for (std::size_t slot = 0; slot < loop.connections.size(); ++slot) {
        if (loop.connections[slot] == connection) {
          replace(loop, slot);  // the connection broke, or leads nowhere
        }
      }
    }
    failed(loop, reason(reply));
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
    const std::array<std::string_view, 6> arguments{"EVALSHA", release_sha_, "1",
                                                    call.key,  call.permit,  call.cost};
    RedisReply reply = co_await connection->command(arguments, options_.timeout);
    if (!reply.error && reply.value.is_error() && reply.value.text.starts_with("NOSCRIPT") &&
        co_await load_scripts(*connection)) {
      co_await connection->command(arguments, options_.timeout);
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
  return false;
}

io::Awaitable<pipeline::ChargeResult> RedisStore::charge(std::size_t index,
                                                         const pipeline::Decision& decision,
                                                         const pipeline::Charges& charges,
                                                         limiter::TimePoint now) {
  Loop& loop = *loops_[index];
  // Unique per request: the process's random base, a count per loop, the loop.
  const std::uint64_t permit = permit_base_ + (++loop.permits_issued << 16) + index;
  pipeline::ChargeResult result;
  if (!co_await call(loop, decision, charges, permit, result)) {
    co_return fall_back(charges, now);
  }
  result.store_permit = permit;
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
  return StoreHealth{.name = "redis",
                     .available = available(),
                     .errors = errors(),
                     .cached_refusals = cached_refusals()};
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
