#include "proxy/store/redis/redis_store.hpp"

#include <algorithm>
#include <array>
#include <random>
#include <utility>

#include "proxy/store/redis/on_error.hpp"
#include "proxy/store/redis/redis_loop.hpp"

namespace sluice::store::redis {
namespace {

std::uint64_t random_base() {
  std::random_device random;
  return (std::uint64_t{random()} << 32) ^ random();
}

}  // namespace

RedisStore::RedisStore(config::RedisOptions options, std::size_t loops)
    : options_(std::move(options)),
      nodes_(options_),
      code_(options_.cluster),
      permit_base_(random_base()),
      lease_holders_(permit_base_, loops) {
  for (std::size_t i = 0; i < loops; ++i) {
    const std::size_t connections =
        std::max<std::size_t>(1, options_.pool / std::max<std::size_t>(loops, 1)) +
        (i < options_.pool % loops && options_.pool > loops ? 1 : 0);
    loops_.push_back(std::make_unique<RedisLoop>(options_, simulated_now_, nodes_, code_,
                                                 lease_holders_, connections,
                                                 PermitIds(permit_base_, i)));
  }
}

RedisStore::~RedisStore() = default;

io::Awaitable<void> RedisStore::open(std::size_t index) {
  RedisLoop& loop = *loops_[index];
  loop.executor = co_await net::this_coro::executor;
  loop.leases.open(*loop.executor);
  co_await loop.routing.open();
}

void RedisStore::close(std::size_t index) { loops_[index]->lanes.close(); }

bool RedisStore::charge_now(std::size_t index, const pipeline::Decision& decision,
                            const pipeline::Charges& charges, limiter::TimePoint now,
                            pipeline::ChargeResult& result) {
  RedisLoop& loop = *loops_[index];
  if (charges.count == 0) {
    result = pipeline::Pipeline::charge_locally(charges, now);
    return true;
  }
  // Keys known to be over their limit are refused here, without a round trip.
  const KeyIds ids = key_ids(decision, charges);
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
  if (loop.leases.active() && loop.leases.answer(decision, charges, ids, cache_now, result)) {
    return true;
  }
  LaneIndices lanes{};
  if (!loop.routing.route(charges, lanes)) {
    loop.errors.add();  // a slot no master serves (a cluster in trouble)
    result = fall_back(options_.on_error, charges, now);
    return true;
  }
  for (std::size_t i = 0; i < charges.count; ++i) {
    if (i > 0 && lanes[i] == lanes[i - 1]) {
      continue;
    }
    Lane& lane = loop.lanes[lanes[i]];
    if (!lane.node.breaker.allow(CircuitBreaker::Clock::now())) {
      result = fall_back(options_.on_error, charges, now);
      return true;
    }
    if (lane.batches.full()) {
      loop.errors.add();  // Redis is not keeping up: no room to wait
      result = fall_back(options_.on_error, charges, now);
      return true;
    }
  }
  return false;
}

io::Awaitable<void> RedisStore::charge(std::size_t index, const pipeline::Decision& decision,
                                       const pipeline::Charges& charges, limiter::TimePoint now,
                                       pipeline::ChargeResult& result) {
  RedisLoop& loop = *loops_[index];
  const std::uint64_t permit = loop.permits.next();
  // Not a coroutine itself: the request waits in the frame of the one it returns.
  if (RedisLeases::any_leases(decision, charges)) {
    return charge_with_leases(loop, decision, charges, permit, now, result);
  }
  return charge_in_redis(loop, decision, charges, permit, now, true, result);
}

io::Awaitable<void> RedisStore::charge_with_leases(RedisLoop& loop,
                                                   const pipeline::Decision& decision,
                                                   const pipeline::Charges& charges,
                                                   std::uint64_t permit, limiter::TimePoint now,
                                                   pipeline::ChargeResult& result) {
  if (loop.leases.active() && loop.leases.waits_for_lease(decision, charges, now)) {
    // A lease it needs is being taken: wait for it rather than ask Redis meanwhile. (Any
    // call that took leases wakes the waiters; each looks whether its own came.)
    do {
      co_await loop.leases.wait_for_grant();
    } while (loop.leases.waits_for_lease(decision, charges, now));
    if (loop.leases.answer(decision, charges, key_ids(decision, charges),
                           simulated_now_.value_or(now), result)) {
      co_return;
    }
  }
  pipeline::Charges topped;
  TopUps added{};
  if (loop.leases.top_ups(decision, charges, now, topped, added)) {
    co_await charge_in_redis(loop, decision, topped, permit, now, false, result);
    loop.leases.grant(decision, charges, added, result, now);
    if (result.counted != pipeline::Counted::yes || result.live_admitted) {
      co_return;
    }
    // Refused with the leases: near the limit, where leases are not worth their permits. The
    // request alone is decided exactly.
  }
  co_await charge_in_redis(loop, decision, charges, permit, now, true, result);
}

io::Awaitable<void> RedisStore::charge_in_redis(RedisLoop& loop, const pipeline::Decision& decision,
                                                const pipeline::Charges& charges,
                                                std::uint64_t permit, limiter::TimePoint now,
                                                bool remember, pipeline::ChargeResult& result) {
  BatchWaiter waiter{
      .decision = decision, .charges = charges, .permit = permit, .now = now, .result = result};
  LaneIndices lanes{};
  bool routed = false;
  for (int attempt = 0; attempt < 2; ++attempt) {
    routed = loop.routing.route(charges, lanes);
    if (!routed) {
      break;
    }
    if (std::any_of(lanes.begin(), lanes.begin() + static_cast<std::ptrdiff_t>(charges.count),
                    [&](std::uint16_t lane) { return lane != lanes[0]; })) {
      co_await loop.across.charge(decision, charges, lanes, permit, now, result);
      if (remember) {
        remember_refusals(loop, decision, charges, result, now);
      }
      co_return;
    }
    waiter.redirected = false;
    co_await loop.batching.wait_in_batch(loop.lanes[lanes[0]], *loop.executor, waiter);
    if (!waiter.redirected) {
      break;
    }
    co_await loop.routing.refresh_slots();  // the slot moved: ask the map, then its master
  }
  if (!waiter.decided) {
    if (waiter.redirected || !routed) {
      loop.errors.add();  // still misplaced: counted here, since the batch's call did not
    }
    result = fall_back(options_.on_error, charges, now);
    co_return;
  }
  result.counted = pipeline::Counted::yes;
  result.store_permit = waiter.permit;
  result.decided_at.fill(waiter.decided_at);
  if (remember) {
    remember_refusals(loop, decision, charges, result, now);
  }
}

void RedisStore::remember_refusals(RedisLoop& loop, const pipeline::Decision& decision,
                                   const pipeline::Charges& charges,
                                   const pipeline::ChargeResult& result, limiter::TimePoint now) {
  if (result.live_admitted) {
    return;
  }
  const KeyIds ids = key_ids(decision, charges);
  const limiter::TimePoint cache_now = simulated_now_.value_or(now);
  for (std::size_t i = 0; i < charges.live; ++i) {
    const limiter::Verdict& verdict = result.outcomes[i].verdict;
    if (!verdict.admitted && verdict.retry_after != limiter::Duration::max() &&
        charges.options[i]->algorithm != limiter::AlgorithmKind::concurrency) {
      loop.over_limit.remember(ids[i], charges.items[i].cost, cache_now, result.outcomes[i]);
    }
  }
}

io::Awaitable<void> RedisStore::give_back(std::size_t index) {
  return loops_[index]->leases.give_back_all();
}

void RedisStore::release(std::size_t index, const pipeline::Decision& decision) {
  if (decision.permit_count == 0) {
    return;
  }
  if (decision.store_permit == 0) {
    pipeline::Pipeline::release_locally(decision);  // `on_error: local` took them from memory
    return;
  }
  loops_[index]->releases.send(
      {decision.permits.begin(),
       decision.permits.begin() + static_cast<std::ptrdiff_t>(decision.permit_count)},
      decision.store_permit);
}

void RedisStore::settle(std::size_t index, const pipeline::Decision& decision,
                        const pipeline::ResponseSaid& said, limiter::TimePoint now) {
  if (decision.later_count == 0) {
    return;
  }
  if (decision.store_permit == 0) {
    // `on_error: local` counted the request in the memory limiters: settled there too.
    pipeline::Pipeline::settle_locally(decision, said, now);
    return;
  }
  RedisLoop& loop = *loops_[index];
  // Per lane (a Cluster's master), its charges: one settlement each, in that lane's batch.
  std::array<Settlement, limiter::kMaxChargesSettledLater> settled{};
  std::array<std::uint16_t, limiter::kMaxChargesSettledLater> lanes{};
  std::array<std::int64_t, limiter::kMaxChargesSettledLater> decided_at{};
  std::size_t count = 0;
  for (std::size_t i = 0; i < decision.later_count; ++i) {
    const pipeline::LaterCharge& later = decision.later[i];
    const auto owed = static_cast<std::int64_t>(pipeline::owed_for(*decision.route, later, said));
    const std::int64_t amount = owed - static_cast<std::int64_t>(later.reserved);
    if (amount == 0) {
      continue;
    }
    if (amount < 0) {
      loop.over_limit.forget(redis_key_id(later.config->name, *later.options, later.shared_key));
    }
    const std::uint16_t lane = loop.routing.lane_of(later.shared_key);
    if (lane == SlotMap::kNone || !loop.executor ||
        !loop.lanes[lane].node.breaker.allow(CircuitBreaker::Clock::now()) ||
        loop.lanes[lane].batches.full()) {
      // Redis cannot take it now: as `on_error` says, in the memory limiters, or lost.
      if (options_.on_error == config::OnStoreError::local) {
        pipeline::Pipeline::settle_locally(*decision.route, {&later, 1}, said, now);
      } else {
        loop.batching.lose_settlement();
      }
      continue;
    }
    settled[count] = {.limiter = later.config,
                      .options = later.options,
                      .shared_key = later.shared_key,
                      .amount = amount};
    decided_at[count] = later.store_decided_at;  // the same for every charge of a lane
    lanes[count++] = lane;
  }
  for (std::size_t first = 0; first < count;) {
    // Charges of one lane are next to each other once sorted; a request has few.
    std::size_t last = first + 1;
    for (std::size_t j = last; j < count; ++j) {
      if (lanes[j] == lanes[first]) {
        std::swap(settled[j], settled[last]);
        std::swap(lanes[j], lanes[last]);
        std::swap(decided_at[j], decided_at[last]);
        ++last;
      }
    }
    loop.batching.settle(loop.lanes[lanes[first]], *loop.executor,
                         {settled.data() + first, last - first}, decision.store_permit,
                         decided_at[first], now);
    first = last;
  }
}

io::Awaitable<void> RedisStore::probe(std::size_t index) { return loops_[index]->lanes.probe(); }

template <class Counter>
std::uint64_t RedisStore::summed(Counter counter) const noexcept {
  std::uint64_t total = 0;
  for (const auto& loop : loops_) {
    total += counter(*loop).value();
  }
  return total;
}

std::optional<StoreHealth> RedisStore::health() const {
  return StoreHealth{
      .name = "redis",
      .available = available(),
      .errors = errors(),
      .cached_refusals = cached_refusals(),
      .calls = summed([](const RedisLoop& loop) -> auto& { return loop.batching.calls(); }),
      .requests_in_calls =
          summed([](const RedisLoop& loop) -> auto& { return loop.batching.requests_in_calls(); }),
      .refunds = refunds(),
      .lost_settlements = lost_settlements(),
      .lease_hits = lease_hits(),
      .lease_holders = lease_holders(),
      .nodes = nodes_.health()};
}

std::uint64_t RedisStore::errors() const noexcept {
  return summed([](const RedisLoop& loop) -> auto& { return loop.errors; });
}

std::uint64_t RedisStore::cached_refusals() const noexcept {
  return summed([](const RedisLoop& loop) -> auto& { return loop.cached_refusals; });
}

std::uint64_t RedisStore::lease_hits() const noexcept {
  return summed([](const RedisLoop& loop) -> auto& { return loop.leases.hits(); });
}

std::uint64_t RedisStore::leases_taken() const noexcept {
  return summed([](const RedisLoop& loop) -> auto& { return loop.leases.taken(); });
}

std::uint64_t RedisStore::settlements() const noexcept {
  return summed([](const RedisLoop& loop) -> auto& { return loop.batching.settlements(); });
}

std::uint64_t RedisStore::lost_settlements() const noexcept {
  return summed([](const RedisLoop& loop) -> auto& { return loop.batching.lost_settlements(); });
}

std::uint64_t RedisStore::refunds() const noexcept {
  return summed([](const RedisLoop& loop) -> auto& { return loop.across.refunds(); });
}

std::size_t RedisStore::masters(std::size_t index) const { return loops_[index]->lanes.serving(); }

}  // namespace sluice::store::redis
