#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include "proxy/io/net.hpp"
#include "proxy/pipeline/pipeline.hpp"
#include "proxy/store/redis/redis_connection.hpp"
#include "proxy/store/redis/redis_decision.hpp"

namespace sluice::store::redis {

/// A request waiting in a batch: what it asks and where its answer goes. It lives in the frame
/// of the coroutine that waits, so a batch holds no request state of its own.
struct BatchWaiter {
  const pipeline::Decision& decision;
  const pipeline::Charges& charges;
  std::uint64_t permit;    ///< The id its concurrency permits are held under.
  limiter::TimePoint now;  ///< The proxy's time, which places calendar windows.
  /// Where Redis's answer is read to, as read_decision() writes it: the request's own result.
  pipeline::ChargeResult& result;
  bool decided = false;  ///< Whether `result` holds Redis's decision.
  /// Not decided because the node did not serve one of its keys' slots (Redis Cluster, a stale
  /// slot map): worth another try once the map is read again.
  bool redirected = false;
  std::int64_t decided_at = 0;  ///< Redis's time of the decision (µs), for a refund.
};

/// A lease's renewal riding in a batch (RedisLeases): nobody waits for it. Once the call is over,
/// its sink takes the answer, or learns that there is none (`admitted` false).
struct LeaseRenewal {
  class Sink {
   public:
    virtual void renewed(const LeaseRenewal& renewal) = 0;

   protected:
    ~Sink() = default;
  };
  Sink* sink = nullptr;
  std::uint64_t key = 0;         ///< The lease's key, as redis_key_id() names it.
  limiter::Permits amount = 0;   ///< Permits asked for.
  limiter::TimePoint sent_at{};  ///< The store's time when it was asked for.
  std::uint64_t permit = 0;      ///< The id its permits are taken under.
  // The answer.
  bool admitted = false;  ///< Redis took the permits: they are the lease's.
  limiter::Status status{};
  std::int64_t decided_at = 0;  ///< Redis's time of the decision (µs).
};

/// Requests of one event loop decided by one call of decide.lua. Its waiters add themselves and
/// wait; the reply is read where it lies (no copy) straight into their results; wake() resumes
/// them all at once. Finished requests' settlements (SPEC §9) ride along with nobody waiting.
/// Reused from batch to batch: its buffers keep their capacity.
class DecisionBatch final : public RedisConnection::ReplySink {
 public:
  explicit DecisionBatch(const io::Executor& executor);

  void add(const KeyLayout& layout, BatchWaiter& waiter);
  /// Adds a settlement (BatchCall::add_settlement), which nobody waits for.
  void add_settlement(const KeyLayout& layout, std::span<const Settlement> settled,
                      std::uint64_t permit, std::int64_t decided_at, limiter::TimePoint now);
  /// Adds a lease's renewal (BatchCall::add_renewal), which nobody waits for.
  void add_renewal(const LeaseRenewal& renewal, std::string_view redis_key,
                   const limiter::LimiterOptions& options, limiter::TimePoint now);
  std::span<BatchWaiter* const> waiters() const noexcept { return waiters_; }
  /// The renewals, with their answers once the call is over (until wake()).
  std::span<const LeaseRenewal> renewals() const noexcept { return renewals_; }
  bool empty() const noexcept { return parts_.empty(); }
  /// Requests, settlements and renewals.
  std::size_t size() const noexcept { return parts_.size(); }
  std::size_t settlements() const noexcept { return settlements_; }
  /// Settlements Redis took in the last reply read.
  std::size_t settled() const noexcept { return settled_; }

  /// The command, as BatchCall::arguments() builds it.
  std::span<const std::string_view> arguments(std::string_view command, std::string_view target,
                                              std::optional<limiter::TimePoint> now,
                                              bool keys_as_arguments = false) {
    return call_.arguments(command, target, now, keys_as_arguments);
  }

  /// Reads decide.lua's reply into the waiters' results.
  void read(const RespValue& reply) override;
  /// Why the last reply read decided nothing or not all (an error reply, a failed request, a
  /// reply of the wrong shape); empty when every waiter was decided.
  const std::string& failure() const noexcept { return failure_; }

  /// Suspends a waiter until wake(). Call right after add(), with no suspension in between.
  io::Awaitable<std::tuple<boost::system::error_code>> wait() {
    return answered_.async_wait(io::use_nothrow);
  }
  /// Resumes every waiter and empties the batch for its next use. The waiters read only their
  /// own BatchWaiter afterwards, so the batch may be reused at once.
  void wake();

 private:
  /// A request's waiter, a settlement's count of charges or a renewal's place in renewals_
  /// (from 1): the parts of the call, in order.
  struct Part {
    BatchWaiter* waiter = nullptr;
    std::size_t settled_charges = 0;
    std::size_t renewal = 0;
  };

  /// Reads a renewal's part of `reply` (decided at `decided_at`) into `renewal`.
  static DecisionReply read_renewal(const RespValue& reply, std::size_t& at, LeaseRenewal& renewal,
                                    std::int64_t decided_at);

  io::Timer answered_;  ///< Never expires: the waiters wait on it, wake() cancels them.
  std::vector<BatchWaiter*> waiters_;
  std::vector<Part> parts_;
  std::vector<LeaseRenewal> renewals_;
  std::size_t settlements_ = 0;
  std::size_t settled_ = 0;
  BatchCall call_;
  std::string failure_;
};

}  // namespace sluice::store::redis
