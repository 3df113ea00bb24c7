#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <utility>

#include "limiter/key_hash.hpp"

namespace sluice::limiter {

/// A KeyHash stored as two 32-bit halves, so that a slot needs only 4-byte alignment: with a
/// 12-byte state a slot is 20 bytes, not 24. Memory per key decides whether a million keys stay
/// in the last-level cache.
class PackedKey {
 public:
  PackedKey() = default;
  explicit PackedKey(KeyHash key) noexcept { std::memcpy(halves_, &key, sizeof key); }
  KeyHash get() const noexcept {
    KeyHash key = 0;
    std::memcpy(&key, halves_, sizeof key);
    return key;
  }

 private:
  std::uint32_t halves_[2] = {0, 0};
};

/// Open-addressing hash table from KeyHash to State with linear probing and backward-shift
/// deletion (no tombstones): one array of {key, state} slots, so a lookup for a known key touches
/// one or two cache lines and never allocates. Capacities need not be powers of two (the home
/// slot is a multiply-shift of the hash), so the table grows by 1.25x at 4/5 load and stays
/// 64% to 80% full: dense enough for a million keys of the small algorithms to fit in cache.
/// Shrinks at 1/5. Not thread-safe: each shard of a KeyedLimiter owns one under its lock.
template <class State>
class ShardTable {
 public:
  struct Slot {
    PackedKey key;  ///< 0: empty.
    State state{};
  };

  static constexpr std::size_t kNotFound = static_cast<std::size_t>(-1);
  static constexpr std::size_t kMinCapacity = 8;

  std::size_t size() const noexcept { return size_; }
  std::size_t capacity() const noexcept { return capacity_; }
  Slot& slot(std::size_t index) noexcept { return slots_[index]; }
  const Slot& slot(std::size_t index) const noexcept { return slots_[index]; }
  bool occupied(std::size_t index) const noexcept { return slots_[index].key.get() != 0; }
  /// Index of `s`, a slot of this table.
  std::size_t index_of(const Slot& s) const noexcept {
    return static_cast<std::size_t>(&s - slots_.get());
  }

  std::size_t find(KeyHash key) const noexcept {
    if (capacity_ == 0) {
      return kNotFound;
    }
    for (std::size_t index = home(key);; index = next(index)) {
      const KeyHash found = slot(index).key.get();
      if (found == key) {
        return index;
      }
      if (found == 0) {
        return kNotFound;
      }
    }
  }

  /// Inserts `key`, which must be absent. May grow (allocate) the table.
  std::size_t insert(KeyHash key, State state) {
    if ((size_ + 1) * 5 > capacity_ * 4) {
      rehash(std::max(kMinCapacity, capacity_ + capacity_ / 4));
    }
    std::size_t index = home(key);
    while (occupied(index)) {
      index = next(index);
    }
    slot(index) = Slot{PackedKey(key), std::move(state)};
    ++size_;
    return index;
  }

  /// Removes the slot at `index`. Later slots of the probe run may move back, into `index`: a
  /// caller scanning forward must look at `index` again.
  void erase(std::size_t index) noexcept {
    std::size_t hole = index;
    for (std::size_t probe = next(hole); occupied(probe); probe = next(probe)) {
      const std::size_t wanted = home(slot(probe).key.get());
      // The slot at `probe` may fill the hole unless its home lies cyclically in (hole, probe].
      const bool stays =
          hole <= probe ? (hole < wanted && wanted <= probe) : (hole < wanted || wanted <= probe);
      if (!stays) {
        slot(hole) = std::move(slot(probe));
        hole = probe;
      }
    }
    slot(hole) = Slot{};
    --size_;
  }

  /// Shrinks the table while it is at most 1/5 full, so that memory follows the live keys down.
  void shrink_if_sparse() {
    if (size_ == 0) {
      slots_.reset();
      capacity_ = 0;
      return;
    }
    std::size_t capacity = capacity_;
    while (capacity > kMinCapacity && size_ * 5 <= capacity) {
      capacity = std::max(kMinCapacity, capacity / 2);
    }
    if (capacity != capacity_) {
      rehash(capacity);
    }
  }

  /// Heap bytes held by the slot array.
  std::size_t memory_bytes() const noexcept { return capacity_ * sizeof(Slot); }

 private:
  std::size_t home(KeyHash key) const noexcept {
    // Multiply-shift maps onto [0, capacity) for any capacity, from the high bits. Scramble first
    // (an odd multiplier is a bijection), so that keys that differ only in low bits, like the
    // shard index, still spread.
    __extension__ using Uint128 = unsigned __int128;
    const std::uint64_t scrambled = key * 0x9E3779B97F4A7C15ULL;
    return static_cast<std::size_t>((static_cast<Uint128>(scrambled) * capacity_) >> 64);
  }
  std::size_t next(std::size_t index) const noexcept {
    return index + 1 == capacity_ ? 0 : index + 1;
  }

  void rehash(std::size_t capacity) {
    auto old = std::move(slots_);
    const std::size_t old_capacity = capacity_;
    slots_ = std::make_unique<Slot[]>(capacity);
    capacity_ = capacity;
    for (std::size_t i = 0; i < old_capacity; ++i) {
      Slot& moving = old[i];
      const KeyHash key = moving.key.get();
      if (key != 0) {
        std::size_t index = home(key);
        while (occupied(index)) {
          index = next(index);
        }
        slot(index) = std::move(moving);
      }
    }
  }

  std::unique_ptr<Slot[]> slots_;
  std::size_t capacity_ = 0;
  std::size_t size_ = 0;
};

}  // namespace sluice::limiter
