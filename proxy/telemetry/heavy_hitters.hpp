#pragma once

#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "limiter/clock.hpp"
#include "proxy/telemetry/space_saving.hpp"

namespace sluice::telemetry {

/// One key of a limiter over the last minute, all loops merged.
struct HeaviestKey {
  limiter::KeyHash key = 0;
  std::uint64_t requests = 0;
  std::uint64_t limited = 0;
  std::uint64_t error = 0;  ///< `requests` exceeds the truth by at most this much.
  bool secret = false;
  std::uint16_t instance = 0;
  std::string text;  ///< Empty for a secret key.
};

/// The heaviest keys of each limiter over a sliding minute (SPEC §10's GET /top), in bounded
/// memory: per event loop and limiter, six Space-Saving summaries of ten seconds each, the
/// oldest cleared as the minute slides, merged only when read.
///
/// Each loop counts into its own summaries under its own mutex, which only a reader ever
/// contends for (a few microseconds, rarely): one uncontended lock per request, and no state
/// shared between loops. A seqlock would spare the lock but make the reader copy entries that
/// change under it, key text included; the lock is simpler and costs about as much.
class HeavyHitters {
 public:
  static constexpr std::size_t kWindows = 6;
  static constexpr limiter::Duration kWindow = std::chrono::seconds(10);
  static constexpr auto kSpan = kWindow * kWindows;

 private:
  struct alignas(64) Loop {
    Loop(std::size_t limiters, std::size_t capacity);
    mutable std::mutex mutex;
    std::vector<SpaceSaving> windows;  ///< [limiter * kWindows + window]
    /// Which ten seconds each window holds, by its number since the clock's epoch.
    std::array<std::int64_t, kWindows> epochs;
  };

 public:
  /// `capacity` keys per limiter per loop per window (config `top_keys`).
  HeavyHitters(std::size_t limiters, std::size_t loops, std::size_t capacity);

  /// One request's counting on one loop: holds that loop's lock while it lives.
  class Recording {
   public:
    /// Counts a request of `key` at `limiter` (its index in the configuration). `describe`
    /// fills the key's text when it enters a summary (see SpaceSaving::count).
    template <class Describe>
    void count(std::size_t limiter, limiter::KeyHash key, bool limited, Describe&& describe) {
      loop_.windows[limiter * kWindows + slot_].count(key, limited, describe);
    }

   private:
    friend class HeavyHitters;
    Recording(Loop& loop, limiter::TimePoint now);
    Loop& loop_;
    std::lock_guard<std::mutex> lock_;
    std::size_t slot_;
  };

  /// Starts counting a request on `loop` at `now`; the window of `now` is cleared first if it
  /// still holds an older one. Each loop calls it from its own thread only.
  Recording recording(std::size_t loop, limiter::TimePoint now) { return {*loops_[loop], now}; }

  /// The keys of `limiter` over the minute before `now`, loops and windows merged, the most
  /// requested first, at most `n`. Thread-safe.
  std::vector<HeaviestKey> heaviest(std::size_t limiter, std::size_t n,
                                    limiter::TimePoint now) const;

  std::size_t capacity() const noexcept { return capacity_; }
  /// Bytes held per limiter on all loops.
  std::size_t memory_per_limiter() const noexcept;

 private:
  std::size_t capacity_;
  std::vector<std::unique_ptr<Loop>> loops_;
};

}  // namespace sluice::telemetry
