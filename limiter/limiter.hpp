#pragma once

#include <cstdint>

#include "limiter/key_hash.hpp"
#include "limiter/time.hpp"
#include "limiter/verdict.hpp"

namespace sluice::limiter {

/// One limiter's part in a request's decision, from evaluate() until commit() or abandon(). The
/// key's shard stays locked in between, so a decision over several limiters is atomic.
struct Ticket {
  void* shard = nullptr;
  void* slot = nullptr;  ///< nullptr when the key could not be tracked (see KeyedLimiter).
  TimePoint now{};
  Permits cost = 0;
  Verdict verdict{};
};

/// A verdict with the status that follows it.
struct Outcome {
  Verdict verdict;
  Status status;
};

struct LimiterStats {
  std::uint64_t keys = 0;          ///< Keys tracked now.
  std::uint64_t evictions = 0;     ///< Idle keys dropped to make room for new ones.
  std::uint64_t overflows = 0;     ///< New keys refused: no room without freeing a limited key.
  std::uint64_t memory_bytes = 0;  ///< Tables, excluding per-key heap state (log, wheel).
};

/// A limiter of one algorithm over many keys. Thread-safe: every method may be called from any
/// thread. The decision methods neither allocate for a known key, nor take a global lock.
class Limiter {
 public:
  Limiter();
  Limiter(const Limiter&) = delete;
  Limiter& operator=(const Limiter&) = delete;
  Limiter(Limiter&&) = delete;
  Limiter& operator=(Limiter&&) = delete;
  virtual ~Limiter() = default;

  /// Locks the key's shard and decides for `cost` without consuming. Must be followed, on the
  /// same thread, by commit() or abandon() of the same ticket.
  virtual Verdict evaluate(KeyHash key, TimePoint now, Permits cost, Ticket& ticket) noexcept = 0;
  /// Consumes the ticket's cost if its verdict admitted it; unlocks.
  virtual Status commit(Ticket& ticket) noexcept = 0;
  /// Consumes nothing; unlocks.
  virtual Status abandon(Ticket& ticket) noexcept = 0;

  /// evaluate() then commit(): the decision for a request that only this limiter governs.
  virtual Outcome decide(KeyHash key, TimePoint now, Permits cost) noexcept;

  /// Consumes `cost` whether it fits or not: a cost learnt once the request was admitted (SPEC
  /// §9: what the response said it cost). The key may go past its limit, into debt, and stays
  /// limited until it is back under. Returns the status that follows.
  virtual Status charge(KeyHash key, TimePoint now, Permits cost) noexcept = 0;
  /// Gives back up to `cost` of the permits consumed at `taken_at` (an estimate reserved at
  /// admission that the response came in under), where the algorithm can still tell them
  /// apart; what it cannot (a window that has passed, a log) it keeps: it errs towards admitting
  /// less.
  virtual void refund(KeyHash key, TimePoint taken_at, TimePoint now, Permits cost) noexcept = 0;

  /// The key's status without consuming anything ("why was I limited?").
  virtual Status peek(KeyHash key, TimePoint now) noexcept = 0;
  /// Forgets everything about `key`, as if it had never been seen: its next request finds a
  /// full budget (an operator's reset, SPEC §10). Returns whether the key was tracked. On a
  /// concurrency limiter this forgets permits still in flight; their release() is then ignored,
  /// or counted against a newer state of the key (never below zero).
  virtual bool forget(KeyHash key) noexcept = 0;
  /// Gives back permits of a finished request (concurrency only; others ignore it).
  virtual void release(KeyHash key, Permits cost) noexcept = 0;
  /// Drops every key whose state is fresh again and shrinks the tables. Returns keys dropped.
  /// Lookups do this a little at a time; call this from a timer so idle memory goes back too.
  virtual std::size_t collect_idle(TimePoint now) = 0;
  virtual LimiterStats stats() const noexcept = 0;
  /// The largest cost this limiter can ever admit.
  virtual Permits max_cost() const noexcept = 0;

  /// Unique per limiter; decide() locks limiters in this order so that it cannot deadlock.
  std::uint64_t id() const noexcept { return id_; }

 private:
  std::uint64_t id_;
};

}  // namespace sluice::limiter
