#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <optional>

#include "limiter/limiter.hpp"
#include "limiter/time.hpp"

namespace sluice::store::redis {

/// Keys the store said are over their limit, until they could pass again, so that a client
/// hammering a limited key costs no store round trip (the Redis store under attack). A key that
/// refused a cost stays refused for that cost until its retry-after, whatever happens meanwhile
/// (other requests only add to its count), so answering from here decides as the store would.
/// (Another cost fits sooner or later: it is not answered from here.) The one exception, a
/// settlement that gives back what a request reserved (SPEC §9), forgets the key here; other
/// loops and replicas may refuse it until its retry-after still, erring towards admitting less.
///
/// One per event loop (no lock); direct-mapped and fixed-size, so it never allocates after
/// construction: a key that collides with another simply replaces it, which only costs a round
/// trip later. Entries are told apart by their full 64-bit hash, so a collision never refuses a
/// key that was not cached.
class OverLimitCache {
 public:
  static constexpr std::size_t kEntries = 4096;

  OverLimitCache() : entries_(std::make_unique<std::array<Entry, kEntries>>()) {}

  /// `key` refused `cost` at `now` with `outcome` (its retry-after must be finite).
  void remember(std::uint64_t key, limiter::Permits cost, limiter::TimePoint now,
                const limiter::Outcome& outcome) noexcept {
    (*entries_)[key % kEntries] = {.key = key,
                                   .cost = cost,
                                   .remaining = static_cast<limiter::Permits>(
                                       std::min<std::uint64_t>(outcome.status.remaining, cost - 1)),
                                   .until = now + outcome.verdict.retry_after,
                                   .reset_at = now + outcome.status.reset};
  }

  /// Forgets `key`'s refusal: something was given back to it.
  void forget(std::uint64_t key) noexcept {
    Entry& entry = (*entries_)[key % kEntries];
    if (entry.key == key) {
      entry = Entry{};
    }
  }

  /// The refusal of `cost` for `key` at `now`, if the cache knows it. Its status is the one
  /// the store gave with the refusal (the headers' remaining may lag behind a refill).
  std::optional<limiter::Outcome> refusal(std::uint64_t key, limiter::Permits cost,
                                          limiter::TimePoint now) const noexcept {
    const Entry& entry = (*entries_)[key % kEntries];
    if (entry.key != key || cost != entry.cost || entry.until <= now) {
      return std::nullopt;
    }
    return limiter::Outcome{
        .verdict = {.admitted = false, .hold = {}, .retry_after = entry.until - now},
        .status = {.remaining = entry.remaining,
                   .reset = std::max(entry.reset_at - now, limiter::Duration::zero())}};
  }

 private:
  struct Entry {
    std::uint64_t key = 0;
    limiter::Permits cost = 0;
    limiter::Permits remaining = 0;
    limiter::TimePoint until = limiter::kAlways;
    limiter::TimePoint reset_at = limiter::kAlways;
  };
  std::unique_ptr<std::array<Entry, kEntries>> entries_;
};

}  // namespace sluice::store::redis
