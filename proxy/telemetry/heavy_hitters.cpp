#include "proxy/telemetry/heavy_hitters.hpp"

#include <algorithm>
#include <limits>
#include <unordered_map>

namespace sluice::telemetry {
namespace {

/// The number of the ten seconds that hold `now`.
std::int64_t window_of(limiter::TimePoint now) noexcept {
  return now.time_since_epoch() / HeavyHitters::kWindow;
}

}  // namespace

HeavyHitters::Loop::Loop(std::size_t limiters, std::size_t capacity) {
  windows.reserve(limiters * kWindows);
  for (std::size_t i = 0; i < limiters * kWindows; ++i) {
    windows.emplace_back(capacity);
  }
  epochs.fill(std::numeric_limits<std::int64_t>::min());
}

HeavyHitters::HeavyHitters(std::size_t limiters, std::size_t loops, std::size_t capacity)
    : capacity_(capacity) {
  for (std::size_t i = 0; i < loops; ++i) {
    loops_.push_back(std::make_unique<Loop>(limiters, capacity));
  }
}

HeavyHitters::Recording::Recording(Loop& loop, limiter::TimePoint now)
    : loop_(loop), lock_(loop.mutex) {
  const std::int64_t epoch = window_of(now);
  slot_ = static_cast<std::size_t>(epoch % static_cast<std::int64_t>(kWindows));
  if (loop_.epochs[slot_] != epoch) {
    // Once per ten seconds: this window last held a minute ago (or never), start it afresh.
    for (std::size_t at = slot_; at < loop_.windows.size(); at += kWindows) {
      loop_.windows[at].clear();
    }
    loop_.epochs[slot_] = epoch;
  }
}

std::vector<HeaviestKey> HeavyHitters::heaviest(std::size_t limiter, std::size_t n,
                                                limiter::TimePoint now) const {
  const std::int64_t newest = window_of(now);
  const std::int64_t oldest = newest - static_cast<std::int64_t>(kWindows) + 1;
  std::vector<HeaviestKey> merged;
  std::unordered_map<limiter::KeyHash, std::size_t> where;
  for (const std::unique_ptr<Loop>& loop : loops_) {
    const std::lock_guard lock(loop->mutex);
    for (std::size_t slot = 0; slot < kWindows; ++slot) {
      const std::int64_t epoch = loop->epochs[slot];
      if (epoch < oldest || epoch > newest) {
        continue;  // older than the minute (or not begun)
      }
      // Summaries merge by adding counts; their error bounds add up alike.
      for (const HeavyKey& counted : loop->windows[limiter * kWindows + slot]) {
        auto [found, added] = where.try_emplace(counted.key, merged.size());
        if (added) {
          merged.push_back({.key = counted.key,
                            .requests = 0,
                            .limited = 0,
                            .error = 0,
                            .secret = counted.about.secret,
                            .instance = counted.about.instance,
                            .text = std::string(counted.about.text())});
        }
        HeaviestKey& into = merged[found->second];
        into.requests += counted.requests;
        into.limited += counted.limited;
        into.error += counted.error;
      }
    }
  }
  const std::size_t kept = std::min(n, merged.size());
  std::partial_sort(merged.begin(), merged.begin() + static_cast<std::ptrdiff_t>(kept),
                    merged.end(), [](const HeaviestKey& a, const HeaviestKey& b) {
                      // Ties by text, then hash: the same order on every read.
                      if (a.requests != b.requests) {
                        return a.requests > b.requests;
                      }
                      return a.text != b.text ? a.text < b.text : a.key < b.key;
                    });
  merged.resize(kept);
  return merged;
}

std::size_t HeavyHitters::memory_per_limiter() const noexcept {
  std::size_t bytes = 0;
  for (const std::unique_ptr<Loop>& loop : loops_) {
    for (std::size_t slot = 0; slot < kWindows; ++slot) {
      bytes += loop->windows[slot].memory_bytes();
    }
  }
  return bytes;
}

}  // namespace sluice::telemetry
