#include "proxy/store/redis/redis_batching.hpp"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/post.hpp>

#include "proxy/store/redis/cluster_routing.hpp"
#include "proxy/store/redis/permit_releases.hpp"
#include "proxy/store/redis/redis_code.hpp"
#include "proxy/store/redis/redis_lanes.hpp"

namespace sluice::store::redis {
namespace {

/// Loads of the code one call may make before it gives up: another flush may land between a load
/// and the call it was for.
constexpr int kCodeReloads = 2;

/// Whether an error says the node does not serve a key's slot: the slot map is stale.
bool redirected(std::string_view error) {
  return error.find("non local key") != error.npos || error.starts_with("MOVED") ||
         error.starts_with("ASK");
}

}  // namespace

DecisionBatch& RedisBatching::open_batch(Lane& lane, const io::Executor& executor) {
  LaneBatches& batches = lane.batches;
  if (batches.open != nullptr) {
    return *batches.open;
  }
  if (batches.spare.empty()) {
    batches.spare.push_back(
        batches.made.emplace_back(std::make_unique<DecisionBatch>(executor)).get());
  }
  batches.open = batches.spare.back();
  batches.spare.pop_back();
  batches.queued.push_back(batches.open);
  if (batches.senders < kCallsInFlight) {
    ++batches.senders;
    net::co_spawn(executor, send_batches(lane), net::detached);
  }
  return *batches.open;
}

template <class Add>
DecisionBatch& RedisBatching::add_to_open_batch(Lane& lane, const io::Executor& executor, Add add) {
  DecisionBatch& batch = open_batch(lane, executor);
  add(batch);
  if (batch.size() >= kMaxBatch) {
    lane.batches.open = nullptr;  // full: the next request opens another
  }
  return batch;
}

DecisionBatch& RedisBatching::join_batch(Lane& lane, const io::Executor& executor,
                                         BatchWaiter& waiter) {
  return add_to_open_batch(lane, executor,
                           [&](DecisionBatch& batch) { batch.add(layout_of(options_), waiter); });
}

void RedisBatching::settle(Lane& lane, const io::Executor& executor,
                           std::span<const Settlement> settled, std::uint64_t permit,
                           std::int64_t decided_at, limiter::TimePoint now) {
  add_to_open_batch(lane, executor, [&](DecisionBatch& batch) {
    batch.add_settlement(layout_of(options_), settled, permit, decided_at, now);
  });
}

void RedisBatching::renew(Lane& lane, const io::Executor& executor, const LeaseRenewal& renewal,
                          std::string_view redis_key, const limiter::LimiterOptions& options,
                          limiter::TimePoint now) {
  add_to_open_batch(lane, executor, [&](DecisionBatch& batch) {
    batch.add_renewal(renewal, redis_key, options, now);
  });
}

io::Awaitable<void> RedisBatching::send_batches(Lane& lane) {
  LaneBatches& batches = lane.batches;
  // Let the loop run what is ready first: the requests it holds join the batch.
  co_await net::post(co_await net::this_coro::executor, io::use_awaitable);
  while (!batches.queued.empty()) {
    DecisionBatch& batch = *batches.queued.front();
    batches.queued.erase(batches.queued.begin());
    if (batches.open == &batch) {
      batches.open = nullptr;
    }
    co_await call(lane, batch);
    settlements_.add(batch.settled());
    lost_settlements_.add(batch.settlements() - batch.settled());
    for (const LeaseRenewal& renewal : batch.renewals()) {
      renewal.sink->renewed(renewal);
    }
    batch.wake();
    batches.spare.push_back(&batch);
  }
  --batches.senders;
}

io::Awaitable<bool> RedisBatching::call(Lane& lane, DecisionBatch& batch) {
  for (int attempt = 0; attempt <= kCodeReloads; ++attempt) {
    RedisConnection* picked = lanes_.pick(lane);
    if (picked == nullptr) {
      lanes_.failed(lane, "no connection", batch.size());
      co_return false;
    }
    const std::shared_ptr<RedisConnection> connection = picked->shared_from_this();
    const std::uint64_t ticket = lane.node.breaker.ticket();
    const auto [command, target] = code_.decide_command();
    calls_.add();
    requests_in_calls_.add(batch.size());
    const RedisReply reply = co_await connection->command(
        batch.arguments(command, target, simulated_now_, options_.cluster), options_.timeout,
        batch);
    if (!reply.error && code_missing(batch.failure())) {
      // The code was flushed (SCRIPT or FUNCTION FLUSH, a failover): load it again.
      std::string why;
      if (attempt < kCodeReloads && co_await code_.load(*connection, options_.timeout, why)) {
        continue;
      }
    }
    if (!reply.error && batch.failure().empty()) {
      lanes_.answered(lane, ticket);
      co_return true;
    }
    if (!reply.error && options_.cluster && redirected(batch.failure())) {
      // A stale slot map, not a failing Redis: the requests it misplaced try again once the map
      // is read again.
      for (BatchWaiter* waiter : batch.waiters()) {
        waiter->redirected = !waiter->decided;
      }
      net::co_spawn(connection->get_executor(), routing_.refresh_slots(), net::detached);
      co_return false;
    }
    if (reply.error == beast::error::timeout) {
      // Redis may still run the call when it wakes up: give back the concurrency permits it
      // would take. On the same connection, so after the call; harmless if it never ran.
      for (const BatchWaiter* waiter : batch.waiters()) {
        releases_.send(PermitReleases::permits_of(waiter->decision, waiter->charges),
                       waiter->permit);
      }
    }
    lanes_.replace_if_lost(lane, connection, reply.error);
    std::size_t undecided = 0;
    for (const BatchWaiter* waiter : batch.waiters()) {
      undecided += waiter->decided ? 0 : 1;
    }
    lanes_.failed(lane, reply.error ? reason_of(reply) : batch.failure(), undecided);
    co_return false;
  }
  co_return false;
}

}  // namespace sluice::store::redis
