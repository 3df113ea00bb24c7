#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

#include "limiter/key_hash.hpp"

namespace sluice::telemetry {

/// What a summary keeps of a key besides its counts: enough to show it and to find its state.
struct HeavyKeyText {
  /// Bytes of key text kept inline; a longer key is cut there (an IPv6 address, a UUID claim
  /// and a separator fit).
  static constexpr std::size_t kCapacity = 94;

  std::array<char, kCapacity> bytes{};
  std::uint8_t length = 0;
  /// A secret key (bearer, cookie, header or query value) keeps no text: it is shown hashed.
  bool secret = false;
  /// Which of its limiter's instances counts the key (see Pipeline::instance_of).
  std::uint16_t instance = 0;

  std::string_view text() const noexcept { return {bytes.data(), length}; }
  /// Keeps `text`, cut to kCapacity bytes.
  void assign(std::string_view text) noexcept;
};

/// One key's counts in a summary.
struct HeavyKey {
  limiter::KeyHash key = 0;
  std::uint32_t requests = 0;  ///< An upper estimate: exact while the summary was never full.
  std::uint32_t error = 0;     ///< `requests` may exceed the truth by at most this much.
  std::uint32_t limited = 0;   ///< Counted from when the key entered the summary.
  HeavyKeyText about;
};

/// The Space-Saving summary (Metwally, Agrawal, El Abbadi 2005) of a stream of keys in fixed
/// memory: `capacity` keys are monitored; a key not monitored takes the place of the one with
/// the fewest requests and inherits its count as its error. Every key seen more than
/// total / capacity times is monitored, and each count exceeds the truth by at most its error.
/// Lookups go through an open-addressed index that holds the key hashes themselves; counts are
/// kept as the paper's Stream-Summary, a list of buckets of keys with equal counts, smallest
/// first, so that a count and an eviction are a few links moved whatever the keys' counts.
/// Neither reads the entries (which are mostly key text). Nothing allocates after
/// construction. Not thread-safe.
class SpaceSaving {
 public:
  explicit SpaceSaving(std::size_t capacity);

  /// Counts one request of `key`. `describe(HeavyKeyText&)` is called only when the key enters
  /// the summary, so that its text is formed and copied only then.
  template <class Describe>
  void count(limiter::KeyHash key, bool limited, Describe&& describe) {
    std::size_t entry = find(key);
    if (entry == kNone) {
      entry = admit(key);
      describe(entries_[entry].about);
    }
    HeavyKey& counted = entries_[entry];
    counted.requests = increment(static_cast<std::uint16_t>(entry));
    counted.limited += limited ? 1 : 0;
  }

  /// Forgets every key (a new sub-window).
  void clear() noexcept;
  /// The keys monitored now, in no order.
  const HeavyKey* begin() const noexcept { return entries_.data(); }
  const HeavyKey* end() const noexcept { return entries_.data() + size_; }
  std::size_t size() const noexcept { return size_; }
  std::size_t capacity() const noexcept { return entries_.size(); }
  /// Bytes held, for the documentation's memory figure.
  std::size_t memory_bytes() const noexcept;

 private:
  static constexpr std::size_t kNone = SIZE_MAX;
  static constexpr std::uint16_t kEmpty = 0xffff;

  std::size_t find(limiter::KeyHash key) const noexcept;
  /// The entry `key` now has, its text not yet described: a free one, or the least-counted
  /// one's, whose count it inherits.
  std::size_t admit(limiter::KeyHash key) noexcept;
  std::size_t home(limiter::KeyHash key) const noexcept { return (key >> 17U) & mask_; }
  void index_insert(limiter::KeyHash key, std::uint16_t entry) noexcept;
  void index_erase(limiter::KeyHash key) noexcept;
  /// Moves `entry` to the bucket one count up; returns its new count.
  std::uint32_t increment(std::uint16_t entry) noexcept;
  /// Puts `entry` first in `bucket`'s keys, or takes it out of its bucket.
  void attach(std::uint16_t entry, std::uint16_t bucket) noexcept;
  void detach(std::uint16_t entry) noexcept;
  /// A bucket of `requests` placed after `before` (kEmpty: first), with no keys yet.
  std::uint16_t new_bucket(std::uint32_t requests, std::uint16_t before) noexcept;
  void drop_bucket(std::uint16_t bucket) noexcept;

  struct Bucket {
    std::uint32_t requests = 0;
    std::uint16_t first = kEmpty;  ///< Its first key's entry.
    std::uint16_t prev = kEmpty;   ///< The bucket of the next smaller count.
    std::uint16_t next = kEmpty;   ///< The bucket of the next larger count; the free list's link.
  };
  struct Links {
    std::uint16_t bucket = kEmpty;
    std::uint16_t prev = kEmpty;  ///< Within the bucket.
    std::uint16_t next = kEmpty;
  };
  struct IndexSlot {
    limiter::KeyHash key = 0;
    std::uint16_t entry = kEmpty;
  };

  std::vector<HeavyKey> entries_;
  std::vector<Links> links_;         ///< Each entry's bucket and neighbours in it.
  std::vector<Bucket> buckets_;      ///< At most one per entry.
  std::uint16_t smallest_ = kEmpty;  ///< The bucket of the smallest count.
  std::uint16_t free_bucket_ = kEmpty;
  std::vector<IndexSlot> index_;  ///< Open addressing, linear probing.
  std::size_t mask_ = 0;
  std::size_t size_ = 0;
};

}  // namespace sluice::telemetry
