#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>

namespace sluice::store::redis {

/// Keeps a failed store from costing its timeout on every request: the first failure opens the
/// breaker, and while it is open requests go straight to the fallback (`on_error`) without
/// trying. Every `probe_interval` one request is let through as a probe; its success closes the
/// breaker. Only a call that began after the last failure can close it: a late answer to a call
/// sent before Redis failed says nothing of Redis now (after a failover, a reply can still come
/// in from the old master). Shared by every event loop; lock-free.
class CircuitBreaker {
 public:
  using Clock = std::chrono::steady_clock;

  explicit CircuitBreaker(Clock::duration probe_interval) : probe_interval_(probe_interval) {}

  /// Whether a request may try the store now: the breaker is closed, or this is the probe.
  bool allow(Clock::time_point now) noexcept {
    if (!open_.load(std::memory_order_acquire)) {
      return true;
    }
    std::int64_t due = probe_at_.load(std::memory_order_relaxed);
    const std::int64_t at = ticks(now);
    // One request per interval wins the exchange and probes.
    return at >= due && probe_at_.compare_exchange_strong(due, ticks(now + probe_interval_),
                                                          std::memory_order_relaxed);
  }

  /// Taken when a call begins, for succeeded(): which failures came before it.
  std::uint64_t ticket() const noexcept { return failures_.load(std::memory_order_acquire); }

  /// A call failed. True when this opened the breaker (log the transition once).
  bool failed(Clock::time_point now) noexcept {
    failures_.fetch_add(1, std::memory_order_acq_rel);
    probe_at_.store(ticks(now + probe_interval_), std::memory_order_relaxed);
    return !open_.exchange(true, std::memory_order_acq_rel);
  }

  /// A call that began with ticket `began` succeeded. True when this closed the breaker: it was
  /// open and no call failed since this one began.
  bool succeeded(std::uint64_t began) noexcept {
    return open_.load(std::memory_order_relaxed) && began == ticket() &&
           open_.exchange(false, std::memory_order_acq_rel);
  }

  bool is_open() const noexcept { return open_.load(std::memory_order_acquire); }

 private:
  static std::int64_t ticks(Clock::time_point t) noexcept { return t.time_since_epoch().count(); }

  Clock::duration probe_interval_;
  std::atomic<bool> open_{false};
  std::atomic<std::uint64_t> failures_{0};  ///< Failures so far: what a ticket holds.
  std::atomic<std::int64_t> probe_at_{0};
};

}  // namespace sluice::store::redis
