#include "proxy/telemetry/space_saving.hpp"

#include <algorithm>
#include <bit>
#include <cassert>

namespace sluice::telemetry {

void HeavyKeyText::assign(std::string_view text) noexcept {
  length = static_cast<std::uint8_t>(std::min(text.size(), kCapacity));
  std::copy_n(text.data(), length, bytes.data());
}

SpaceSaving::SpaceSaving(std::size_t capacity)
    : entries_(capacity),
      heap_(capacity),
      position_(capacity),
      // At most half full: probes stay short.
      index_(std::bit_ceil(std::max<std::size_t>(2 * capacity, 2))),
      mask_(index_.size() - 1) {
  assert(capacity > 0 && capacity < kEmpty);
}

void SpaceSaving::clear() noexcept {
  size_ = 0;
  std::fill(index_.begin(), index_.end(), IndexSlot{});
}

std::size_t SpaceSaving::memory_bytes() const noexcept {
  return sizeof(*this) + entries_.size() * sizeof(HeavyKey) + heap_.size() * sizeof(HeapNode) +
         position_.size() * sizeof(std::uint16_t) + index_.size() * sizeof(IndexSlot);
}

std::size_t SpaceSaving::find(limiter::KeyHash key) const noexcept {
  for (std::size_t slot = home(key);; slot = (slot + 1) & mask_) {
    const IndexSlot& at = index_[slot];
    if (at.entry == kEmpty) {
      return kNone;
    }
    if (at.key == key) {
      return at.entry;
    }
  }
}

std::size_t SpaceSaving::admit(limiter::KeyHash key) noexcept {
  std::size_t entry = 0;
  if (size_ < entries_.size()) {
    // A free entry with no requests yet: the least of all, so it is the heap's new root.
    entry = size_++;
    entries_[entry] = HeavyKey{};
    std::size_t at = size_ - 1;
    heap_[at] = {.requests = 0, .entry = static_cast<std::uint16_t>(entry)};
    position_[entry] = static_cast<std::uint16_t>(at);
    while (at > 0) {
      swap_heap(at, (at - 1) / 2);
      at = (at - 1) / 2;
    }
  } else {
    entry = heap_[0].entry;
    index_erase(entries_[entry].key);
    HeavyKey& replaced = entries_[entry];
    replaced.error = replaced.requests;  // inherited: the new key was seen at most that often
    replaced.limited = 0;
    replaced.about = {};
  }
  entries_[entry].key = key;
  index_insert(key, static_cast<std::uint16_t>(entry));
  return entry;
}

void SpaceSaving::index_insert(limiter::KeyHash key, std::uint16_t entry) noexcept {
  std::size_t slot = home(key);
  while (index_[slot].entry != kEmpty) {
    slot = (slot + 1) & mask_;
  }
  index_[slot] = {.key = key, .entry = entry};
}

void SpaceSaving::index_erase(limiter::KeyHash key) noexcept {
  std::size_t hole = home(key);
  while (index_[hole].key != key) {
    hole = (hole + 1) & mask_;
  }
  // Backward-shift deletion: pull later members of the probe run into the hole unless their
  // home lies cyclically in (hole, slot], where they would become unreachable.
  for (std::size_t slot = (hole + 1) & mask_; index_[slot].entry != kEmpty;
       slot = (slot + 1) & mask_) {
    const std::size_t wanted = home(index_[slot].key);
    const bool stays =
        hole <= slot ? (hole < wanted && wanted <= slot) : (hole < wanted || wanted <= slot);
    if (!stays) {
      index_[hole] = index_[slot];
      hole = slot;
    }
  }
  index_[hole] = IndexSlot{};
}

void SpaceSaving::sift_down(std::size_t at) noexcept {
  for (;;) {
    const std::size_t left = 2 * at + 1;
    if (left >= size_) {
      return;
    }
    std::size_t least = left;
    if (left + 1 < size_ && heap_[left + 1].requests < heap_[left].requests) {
      least = left + 1;
    }
    if (heap_[at].requests <= heap_[least].requests) {
      return;
    }
    swap_heap(at, least);
    at = least;
  }
}

void SpaceSaving::swap_heap(std::size_t a, std::size_t b) noexcept {
  std::swap(heap_[a], heap_[b]);
  position_[heap_[a].entry] = static_cast<std::uint16_t>(a);
  position_[heap_[b].entry] = static_cast<std::uint16_t>(b);
}

}  // namespace sluice::telemetry
