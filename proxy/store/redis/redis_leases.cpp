#include "proxy/store/redis/redis_leases.hpp"

#include <algorithm>
#include <array>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <limits>

#include "proxy/store/redis/redis_scripts.hpp"

namespace sluice::store::redis {

limiter::Permits lease_size(const config::LimiterConfig& limiter,
                            const limiter::LimiterOptions& o) noexcept {
  if (limiter.lease == 0) {
    return 0;
  }
  double capacity = static_cast<double>(o.limit);
  if (o.algorithm == limiter::AlgorithmKind::token_bucket) {
    capacity = o.burst.value_or(std::max(1.0, o.rate.per_second()));
  } else if (o.algorithm == limiter::AlgorithmKind::leaky_bucket) {
    capacity = o.burst.value_or(0) + 1;
  }
  return static_cast<limiter::Permits>(std::min<std::uint64_t>(
      std::min<std::uint64_t>(limiter.lease, std::numeric_limits<limiter::Permits>::max()),
      static_cast<std::uint64_t>(std::max(1.0, capacity))));
}

limiter::TimePoint lease_until(const limiter::LimiterOptions& o, const limiter::Status& status,
                               limiter::TimePoint now) noexcept {
  return o.algorithm == limiter::AlgorithmKind::fixed_window ? now + status.reset : limiter::kNever;
}

namespace {

/// A fixed window's end on Redis's clock (µs), from a decision at `decided_at` with `status`.
std::int64_t window_end(std::int64_t decided_at, const limiter::Status& status) noexcept {
  return decided_at + std::chrono::duration_cast<std::chrono::microseconds>(status.reset).count();
}

}  // namespace

bool RedisLeases::answer(const pipeline::Decision& decision, const pipeline::Charges& charges,
                         const KeyIds& ids, limiter::TimePoint now,
                         pipeline::ChargeResult& result) {
  std::array<LeaseTable::Lease*, limiter::kMaxChargesPerRequest> leases{};
  for (std::size_t i = 0; i < charges.count; ++i) {
    if (decision.reports[charges.report[i]].limiter->lease == 0) {
      return false;
    }
    leases[i] = table_->usable(ids[i], charges.items[i].cost, now);
    if (leases[i] == nullptr) {
      return false;
    }
  }
  result = pipeline::ChargeResult{};
  result.live_admitted = true;
  result.shadow_admitted = charges.count > charges.live;
  for (std::size_t i = 0; i < charges.count; ++i) {
    LeaseTable::Lease& lease = *leases[i];
    lease.left -= charges.items[i].cost;
    if (lease.left * 2 <= lease.size) {
      renew(lease, now);
    }
    // What this replica can still grant: Redis's remaining when the lease was taken, and what
    // is left of the lease.
    result.outcomes[i] = {.verdict = {.admitted = true, .hold = {}, .retry_after = {}},
                          .status = {.remaining = lease.status.remaining + lease.left,
                                     .reset = std::max(lease.taken_at + lease.status.reset - now,
                                                       limiter::Duration::zero())}};
  }
  hits_.add();
  return true;
}

bool RedisLeases::waits_for_lease(const pipeline::Decision& decision,
                                  const pipeline::Charges& charges, limiter::TimePoint now) {
  const limiter::TimePoint lease_now = simulated_now_.value_or(now);
  bool taking = false;
  for (std::size_t i = 0; i < charges.count; ++i) {
    const config::LimiterConfig& limiter = *decision.reports[charges.report[i]].limiter;
    if (limiter.lease == 0) {
      return false;
    }
    const std::uint64_t id = redis_key_id(limiter.name, *charges.options[i], charges.shared_key[i]);
    if (table_->usable(id, charges.items[i].cost, lease_now) != nullptr) {
      continue;  // room, whether or not a renewal is out
    }
    if (table_->taking(id) != id) {
      return false;
    }
    taking = true;
  }
  return taking;
}

bool RedisLeases::top_ups(const pipeline::Decision& decision, const pipeline::Charges& charges,
                          limiter::TimePoint now, pipeline::Charges& topped, TopUps& added) {
  bool any = false;
  const limiter::TimePoint lease_now = simulated_now_.value_or(now);
  for (std::size_t i = 0; i < charges.count; ++i) {
    const config::LimiterConfig& limiter = *decision.reports[charges.report[i]].limiter;
    const limiter::Permits size = lease_size(limiter, *charges.options[i]);
    if (size == 0) {
      continue;
    }
    if (!table_) {
      table_ = std::make_unique<LeaseTable>();
      if (holders_.first_to_lease()) {
        net::co_spawn(granted_->get_executor(), heartbeat(), net::detached);
      }
    }
    const std::uint64_t id = redis_key_id(limiter.name, *charges.options[i], charges.shared_key[i]);
    std::uint64_t& taking = table_->taking(id);
    if (table_->usable(id, charges.items[i].cost, lease_now) == nullptr && taking != id) {
      taking = id;  // until grant()
      added[i] = size;
      any = true;
    }
  }
  if (any) {
    topped = charges;
    for (std::size_t i = 0; i < charges.count; ++i) {
      topped.items[i].cost += added[i];
    }
  }
  return any;
}

void RedisLeases::grant(const pipeline::Decision& decision, const pipeline::Charges& charges,
                        const TopUps& added, pipeline::ChargeResult& result,
                        limiter::TimePoint now) {
  const bool admitted = result.counted == pipeline::Counted::yes && result.live_admitted;
  const limiter::TimePoint lease_now = simulated_now_.value_or(now);
  for (std::size_t i = 0; i < charges.count; ++i) {
    if (added[i] == 0) {
      continue;
    }
    const config::LimiterConfig& limiter = *decision.reports[charges.report[i]].limiter;
    const std::uint64_t id = redis_key_id(limiter.name, *charges.options[i], charges.shared_key[i]);
    if (table_->taking(id) == id) {
      table_->taking(id) = 0;  // the next request may take one again
    }
    if (!admitted || (i >= charges.live && !result.shadow_admitted)) {
      continue;  // not taken
    }
    LeaseTable::Lease& lease = table_->entry_for(id, lease_now);
    if (lease.left != 0 && lease_now < lease.until) {
      give_back(lease);  // another key's, or this key's last one, too small or ended
    }
    limiter::Outcome& outcome = result.outcomes[i];
    lease.key = id;
    lease.left = added[i];
    lease.size = added[i];
    lease.status = outcome.status;
    lease.taken_at = lease_now;
    lease.until = lease_until(*charges.options[i], outcome.status, lease_now);
    lease.redis_key.clear();
    append_redis_key(lease.redis_key, layout_of(options_), limiter.name, *charges.options[i],
                     charges.shared_key[i]);
    lease.options = *charges.options[i];
    lease.decided_at = result.decided_at[i];
    lease.window_end = window_end(lease.decided_at, outcome.status);
    lease.permit = result.store_permit;
    outcome.status.remaining += added[i];  // this replica holds them
    taken_.add();
  }
  granted_->cancel();  // requests that waited for these leases look again
}

void RedisLeases::renew(LeaseTable::Lease& lease, limiter::TimePoint now) {
  std::uint64_t& taking = table_->taking(lease.key);
  if (taking == lease.key || lease.left >= lease.size) {
    return;  // one renewal of a key at a time
  }
  const std::uint16_t index = routing_.lane_of(std::string_view(lease.redis_key));
  if (index == SlotMap::kNone) {
    return;
  }
  Lane& lane = lanes_[index];
  if (!lane.node.breaker.allow(CircuitBreaker::Clock::now()) || lane.batches.full()) {
    return;
  }
  taking = lease.key;  // until renewed()
  batching_.renew(lane, granted_->get_executor(),
                  {.sink = this,
                   .key = lease.key,
                   .amount = lease.size - lease.left,
                   .sent_at = now,
                   .permit = permits_.next()},
                  lease.redis_key, lease.options, now);
}

void RedisLeases::renewed(const LeaseRenewal& renewal) {
  std::uint64_t& taking = table_->taking(renewal.key);
  if (taking == renewal.key) {
    taking = 0;
  }
  granted_->cancel();  // requests that waited for this key's lease look again
  LeaseTable::Lease* lease = table_->find(renewal.key);
  if (!renewal.admitted || lease == nullptr) {
    // Refused (near the limit: the lease runs out, then requests are decided exactly), failed,
    // or its entry went to another key meanwhile: those permits stay taken until the window or
    // bucket moves on.
    return;
  }
  // Its end as seen from when it was asked for, which is no later than Redis's decision.
  const limiter::TimePoint now = renewal.sent_at;
  const limiter::TimePoint until = lease_until(lease->options, renewal.status, now);
  const bool fixed_window = lease->options.algorithm == limiter::AlgorithmKind::fixed_window;
  const std::int64_t end = window_end(renewal.decided_at, renewal.status);
  // Spent while the renewal was out (asked for: what was spent before it went).
  const limiter::Permits spent_meanwhile =
      lease->size - renewal.amount - std::min(lease->left, lease->size - renewal.amount);
  const bool merged =
      lease->left != 0 && now < lease->until && (!fixed_window || end == lease->window_end);
  if (merged) {
    // Topped up: what was left and what came hold at most the lease's size together, and end
    // together (a fixed window's with the window both were counted in).
    lease->left += renewal.amount;
    lease->decided_at = std::min(lease->decided_at, renewal.decided_at);
    lease->until = std::max(lease->until, until);
  } else {
    // Spent, ended, or a fixed window's permits of a window that is over: the renewal alone.
    lease->left = renewal.amount;
    lease->decided_at = renewal.decided_at;
    lease->until = until;
  }
  lease->status = renewal.status;
  lease->taken_at = now;
  lease->window_end = end;
  lease->permit = renewal.permit;
  taken_.add();
  if (merged && spent_meanwhile * 4 >= lease->size) {
    // A key spending a quarter of its lease per round trip: top it up again at once, so that
    // renewals follow each other and the lease does not run dry before the next one comes.
    renew(*lease, simulated_now_.value_or(limiter::SystemClock().now()));
  }
}

void RedisLeases::give_back(LeaseTable::Lease& lease) {
  const limiter::Permits left = lease.left;
  lease.left = 0;
  const std::uint16_t index = routing_.lane_of(std::string_view(lease.redis_key));
  RedisConnection* connection =
      index == SlotMap::kNone || !code_.uses_functions() ? nullptr : lanes_.pick(lanes_[index]);
  if (connection == nullptr) {
    return;  // its permits stay taken until the window or bucket moves on
  }
  const std::array<RefundItem, 1> item{
      RefundItem{lease.redis_key, &lease.options, left, limiter::Duration::zero()}};
  net::co_spawn(connection->get_executor(),
                run_refund(connection->shared_from_this(),
                           refund_command(refund_function(), item, lease.permit, lease.decided_at,
                                          simulated_now_)),
                net::detached);
}

// A member, not a lambda: a coroutine lambda's captures live in the closure, which is gone
// once co_spawn has been called; a member function's frame keeps `this` itself.
io::Awaitable<void> RedisLeases::run_refund(std::shared_ptr<RedisConnection> connection,
                                            std::vector<std::string> command) {
  const std::vector<std::string_view> arguments(command.begin(), command.end());
  co_await connection->command(arguments, options_.timeout);
}

io::Awaitable<void> RedisLeases::heartbeat() {
  const std::string key = "{" + options_.prefix + "}lease-holders";
  std::vector<std::string> holders;  // "replica-loop"
  for (std::size_t i = 0; i < holders_.loops(); ++i) {
    holders.push_back(std::to_string(holders_.replica()) + "-" + std::to_string(i));
  }
  io::Timer timer(co_await net::this_coro::executor);
  while (!lanes_.closed()) {
    const std::uint16_t lane = routing_.lane_of(std::string_view(key));
    RedisConnection* picked = lane == SlotMap::kNone ? nullptr : lanes_.pick(lanes_[lane]);
    if (picked != nullptr) {
      const auto connection = picked->shared_from_this();
      const auto now_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                              std::chrono::system_clock::now().time_since_epoch())
                              .count();
      // A replica that stops beating is forgotten after 3 beats.
      const std::string until =
          std::to_string(now_ms + 3 * std::chrono::milliseconds(kHeartbeat).count());
      const std::string gone = std::to_string(now_ms);
      std::vector<std::string_view> add{"ZADD", key};
      for (const std::string& holder : holders) {
        add.insert(add.end(), {until, holder});
      }
      const std::array<std::string_view, 4> trim{"ZREMRANGEBYSCORE", key, "-inf", gone};
      const std::array<std::string_view, 2> count{"ZCARD", key};
      co_await connection->command(add, options_.timeout);
      co_await connection->command(trim, options_.timeout);
      const RedisReply counted = co_await connection->command(count, options_.timeout);
      if (!counted.error && counted.value.kind == RespValue::Kind::integer) {
        holders_.counted(counted.value.integer);
      }
    }
    timer.expires_after(kHeartbeat);
    co_await timer.async_wait(io::use_nothrow);
  }
}

io::Awaitable<void> RedisLeases::give_back_all() {
  if (!table_) {
    co_return;
  }
  // One after the other, each awaited: the loop is about to stop.
  std::vector<std::pair<std::shared_ptr<RedisConnection>, std::vector<std::string>>> refunds;
  const limiter::TimePoint now = simulated_now_.value_or(limiter::SystemClock().now());
  table_->for_each_held([&](LeaseTable::Lease& lease) {
    if (lease.until <= now) {
      lease.left = 0;  // ended: its permits no longer count where it was taken
      return;
    }
    const std::uint16_t lane = routing_.lane_of(std::string_view(lease.redis_key));
    RedisConnection* connection =
        lane == SlotMap::kNone || !code_.uses_functions() ? nullptr : lanes_.pick(lanes_[lane]);
    if (connection != nullptr) {
      const std::array<RefundItem, 1> item{
          RefundItem{lease.redis_key, &lease.options, lease.left, limiter::Duration::zero()}};
      refunds.emplace_back(
          connection->shared_from_this(),
          refund_command(refund_function(), item, lease.permit, lease.decided_at, simulated_now_));
    }
    lease.left = 0;
  });
  for (auto& [connection, command] : refunds) {
    co_await run_refund(connection, std::move(command));
  }
}

}  // namespace sluice::store::redis
