#include "proxy/store/redis/cross_master_charges.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <array>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <deque>
#include <vector>

#include "config/url.hpp"
#include "proxy/store/redis/on_error.hpp"
#include "proxy/store/redis/redis_scripts.hpp"

namespace sluice::store::redis {

io::Awaitable<void> CrossMasterCharges::decide_part(Lane& lane, BatchWaiter& waiter,
                                                    std::size_t& pending, io::Timer& done) {
  co_await batching_.wait_in_batch(lane, co_await net::this_coro::executor, waiter);
  if (--pending == 0) {
    done.cancel();
  }
}

io::Awaitable<void> CrossMasterCharges::charge(const pipeline::Decision& decision,
                                               const pipeline::Charges& charges,
                                               const LaneIndices& lanes, std::uint64_t permit,
                                               limiter::TimePoint now,
                                               pipeline::ChargeResult& result) {
  // One part per lane, its charges in the request's order (live ones first).
  struct Part {
    std::uint16_t lane;
    pipeline::Charges charges;
    std::array<std::size_t, limiter::kMaxChargesPerRequest> index{};  ///< In the request.
  };
  std::vector<Part> parts;
  for (std::size_t i = 0; i < charges.count; ++i) {
    auto part =
        std::find_if(parts.begin(), parts.end(), [&](const Part& p) { return p.lane == lanes[i]; });
    if (part == parts.end()) {
      part = parts.insert(parts.end(), Part{.lane = lanes[i], .charges = {}});
    }
    pipeline::Charges& c = part->charges;
    part->index[c.count] = i;
    c.items[c.count] = charges.items[i];
    c.options[c.count] = charges.options[i];
    c.report[c.count] = charges.report[i];
    c.shared_key[c.count] = charges.shared_key[i];
    c.live += i < charges.live ? 1 : 0;
    ++c.count;
  }
  std::deque<BatchWaiter> waiters;
  std::deque<pipeline::ChargeResult> results;
  const auto executor = co_await net::this_coro::executor;
  io::Timer done(executor, io::Timer::time_point::max());
  std::size_t pending = parts.size();
  for (const Part& part : parts) {
    BatchWaiter& waiter = waiters.emplace_back(BatchWaiter{.decision = decision,
                                                           .charges = part.charges,
                                                           .permit = permit,
                                                           .now = now,
                                                           .result = results.emplace_back()});
    net::co_spawn(executor, decide_part(lanes_[part.lane], waiter, pending, done), net::detached);
  }
  if (pending > 0) {
    co_await done.async_wait(io::use_nothrow);
  }
  // All or nothing: the live charges admit the request only if every part's did; the shadow
  // ones are then counted only if every part's shadow ones admitted too.
  bool decided = true;
  bool live = true;
  bool shadow = true;
  for (const BatchWaiter& waiter : waiters) {
    decided = decided && waiter.decided;
    live = live && waiter.result.live_admitted;
    shadow =
        shadow && (waiter.charges.count == waiter.charges.live || waiter.result.shadow_admitted);
  }
  result = pipeline::ChargeResult{};
  result.store_permit = permit;
  result.live_admitted = decided && live;
  result.shadow_admitted = result.live_admitted && charges.count > charges.live && shadow;
  for (std::size_t p = 0; p < parts.size(); ++p) {
    BatchWaiter& waiter = waiters[p];
    if (waiter.decided) {
      // Takes back what this part committed that the whole request may not keep; the statuses
      // of those charges become the refunded ones.
      co_await refund(lanes_[parts[p].lane],
                      refund_call(refund_function(), layout_of(options_), decision, waiter.charges,
                                  waiter.result, !result.live_admitted, !result.shadow_admitted,
                                  permit, waiter.decided_at, simulated_now_),
                      waiter.result);
    }
    for (std::size_t j = 0; j < waiter.charges.count; ++j) {
      const bool is_live = j < waiter.charges.live;
      // Shadow limiters of a refused request are not evaluated.
      result.outcomes[parts[p].index[j]] =
          is_live || result.live_admitted ? waiter.result.outcomes[j] : limiter::Outcome{};
      result.decided_at[parts[p].index[j]] = waiter.decided_at;
    }
  }
  if (!decided) {
    result = fall_back(options_.on_error, charges, now);
  }
}

io::Awaitable<void> CrossMasterCharges::refund(Lane& lane, RefundCall call,
                                               pipeline::ChargeResult& result) {
  if (call.charges.empty()) {
    co_return;
  }
  RedisConnection* picked = lanes_.pick(lane);
  if (picked == nullptr) {
    co_return;  // its permits stay taken until their window or bucket moves on
  }
  const std::shared_ptr<RedisConnection> connection = picked->shared_from_this();
  const std::vector<std::string_view> arguments(call.command.begin(), call.command.end());
  const RedisReply reply = co_await connection->command(arguments, options_.timeout);
  if (reply.error || !read_refund(reply.value, call, result)) {
    spdlog::debug("Redis store at {}: a refund failed ({})", config::redact_url(lane.node.url),
                  reason_of(reply));
    co_return;
  }
  refunds_.add();
}

}  // namespace sluice::store::redis
