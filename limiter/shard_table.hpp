#pragma once

#include <bit>
#include <cstddef>
#include <memory>
#include <utility>

#include "limiter/key_hash.hpp"

namespace sluice::limiter {

/// Open-addressing hash table from KeyHash to State with linear probing and backward-shift
/// deletion (no tombstones): one array of {key, state} slots, so a lookup for a known key touches
/// one or two cache lines and never allocates. Grows at 3/4 load, shrinks at 1/8.
/// Not thread-safe: each shard of a KeyedLimiter owns one under its lock.
template <class State>
class ShardTable {
 public:
  struct Slot {
    KeyHash key = 0;  ///< 0: empty.
    State state{};
  };

  static constexpr std::size_t kNotFound = static_cast<std::size_t>(-1);
  static constexpr std::size_t kMinCapacity = 8;

  std::size_t size() const noexcept { return size_; }
  std::size_t capacity() const noexcept { return capacity_; }
  Slot& slot(std::size_t index) noexcept { return slots_[index]; }
  const Slot& slot(std::size_t index) const noexcept { return slots_[index]; }

  std::size_t find(KeyHash key) const noexcept {
    if (capacity_ == 0) {
      return kNotFound;
    }
    for (std::size_t index = home(key);; index = next(index)) {
      if (slots_[index].key == key) {
        return index;
      }
      if (slots_[index].key == 0) {
        return kNotFound;
      }
    }
  }

  /// Inserts `key`, which must be absent. May grow (allocate) the table.
  std::size_t insert(KeyHash key, State state) {
    if ((size_ + 1) * 4 > capacity_ * 3) {
      rehash(capacity_ == 0 ? kMinCapacity : capacity_ * 2);
    }
    std::size_t index = home(key);
    while (slots_[index].key != 0) {
      index = next(index);
    }
    slots_[index] = Slot{key, std::move(state)};
    ++size_;
    return index;
  }

  /// Removes the slot at `index`. Later slots of the probe run may move back by one, into
  /// `index`: a caller scanning forward must look at `index` again.
  void erase(std::size_t index) noexcept {
    std::size_t hole = index;
    for (std::size_t probe = next(hole); slots_[probe].key != 0; probe = next(probe)) {
      const std::size_t wanted = home(slots_[probe].key);
      // The slot at `probe` may fill the hole unless its home lies cyclically in (hole, probe].
      const bool stays = hole <= probe ? (hole < wanted && wanted <= probe)
                                       : (hole < wanted || wanted <= probe);
      if (!stays) {
        slots_[hole] = std::move(slots_[probe]);
        hole = probe;
      }
    }
    slots_[hole] = Slot{};
    --size_;
  }

  /// Halves the table while it is at most 1/8 full, so that memory follows the live keys down.
  void shrink_if_sparse() {
    std::size_t capacity = capacity_;
    while (capacity > kMinCapacity && size_ * 8 <= capacity) {
      capacity /= 2;
    }
    if (size_ == 0) {
      slots_.reset();
      capacity_ = 0;
      mask_ = 0;
    } else if (capacity != capacity_) {
      rehash(capacity);
    }
  }

  /// Heap bytes held by the slot array.
  std::size_t memory_bytes() const noexcept { return capacity_ * sizeof(Slot); }

 private:
  std::size_t home(KeyHash key) const noexcept {
    // The low bits chose the shard; mix so that the slot index uses different ones.
    return static_cast<std::size_t>((key * 0x9E3779B97F4A7C15ULL) >> 32) & mask_;
  }
  std::size_t next(std::size_t index) const noexcept { return (index + 1) & mask_; }

  void rehash(std::size_t capacity) {
    auto old = std::move(slots_);
    const std::size_t old_capacity = capacity_;
    slots_ = std::make_unique<Slot[]>(capacity);
    capacity_ = capacity;
    mask_ = capacity - 1;
    for (std::size_t i = 0; i < old_capacity; ++i) {
      if (old[i].key != 0) {
        std::size_t index = home(old[i].key);
        while (slots_[index].key != 0) {
          index = next(index);
        }
        slots_[index] = std::move(old[i]);
      }
    }
  }

  std::unique_ptr<Slot[]> slots_;
  std::size_t capacity_ = 0;
  std::size_t mask_ = 0;
  std::size_t size_ = 0;
};

}  // namespace sluice::limiter
