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
      links_(capacity),
      buckets_(capacity),
      // At most half full: probes stay short.
      index_(std::bit_ceil(std::max<std::size_t>(2 * capacity, 2))),
      mask_(index_.size() - 1) {
  assert(capacity > 0 && capacity < kEmpty);
  clear();
}

void SpaceSaving::clear() noexcept {
  size_ = 0;
  std::fill(index_.begin(), index_.end(), IndexSlot{});
  smallest_ = kEmpty;
  free_bucket_ = kEmpty;
  for (std::size_t b = buckets_.size(); b-- > 0;) {
    buckets_[b].next = free_bucket_;
    free_bucket_ = static_cast<std::uint16_t>(b);
  }
}

std::size_t SpaceSaving::memory_bytes() const noexcept {
  return sizeof(*this) + entries_.size() * sizeof(HeavyKey) + links_.size() * sizeof(Links) +
         buckets_.size() * sizeof(Bucket) + index_.size() * sizeof(IndexSlot);
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
  std::uint16_t entry = 0;
  if (size_ < entries_.size()) {
    // A free entry with no requests yet: the least of all, in a bucket of 0 first.
    entry = static_cast<std::uint16_t>(size_++);
    entries_[entry] = HeavyKey{};
    const std::uint16_t zero = smallest_ != kEmpty && buckets_[smallest_].requests == 0
                                   ? smallest_
                                   : new_bucket(0, kEmpty);
    attach(entry, zero);
  } else {
    entry = buckets_[smallest_].first;
    index_erase(entries_[entry].key);
    HeavyKey& replaced = entries_[entry];
    replaced.error = replaced.requests;  // inherited: the new key was seen at most that often
    replaced.limited = 0;
    replaced.about = {};
  }
  entries_[entry].key = key;
  index_insert(key, entry);
  return entry;
}

std::uint32_t SpaceSaving::increment(std::uint16_t entry) noexcept {
  const std::uint16_t bucket = links_[entry].bucket;
  const std::uint32_t requests = buckets_[bucket].requests + 1;
  const std::uint16_t next = buckets_[bucket].next;
  const bool alone = buckets_[bucket].first == entry && links_[entry].next == kEmpty;
  if (next != kEmpty && buckets_[next].requests == requests) {
    detach(entry);
    attach(entry, next);
    if (alone) {
      drop_bucket(bucket);
    }
  } else if (alone) {
    buckets_[bucket].requests = requests;  // still between its neighbours
  } else {
    detach(entry);
    attach(entry, new_bucket(requests, bucket));
  }
  return requests;
}

void SpaceSaving::attach(std::uint16_t entry, std::uint16_t bucket) noexcept {
  Links& links = links_[entry];
  links.bucket = bucket;
  links.prev = kEmpty;
  links.next = buckets_[bucket].first;
  if (links.next != kEmpty) {
    links_[links.next].prev = entry;
  }
  buckets_[bucket].first = entry;
}

void SpaceSaving::detach(std::uint16_t entry) noexcept {
  const Links& links = links_[entry];
  if (links.prev != kEmpty) {
    links_[links.prev].next = links.next;
  } else {
    buckets_[links.bucket].first = links.next;
  }
  if (links.next != kEmpty) {
    links_[links.next].prev = links.prev;
  }
}

std::uint16_t SpaceSaving::new_bucket(std::uint32_t requests, std::uint16_t before) noexcept {
  const std::uint16_t bucket = free_bucket_;
  free_bucket_ = buckets_[bucket].next;
  Bucket& made = buckets_[bucket];
  made.requests = requests;
  made.first = kEmpty;
  made.prev = before;
  made.next = before == kEmpty ? smallest_ : buckets_[before].next;
  if (made.next != kEmpty) {
    buckets_[made.next].prev = bucket;
  }
  if (before == kEmpty) {
    smallest_ = bucket;
  } else {
    buckets_[before].next = bucket;
  }
  return bucket;
}

void SpaceSaving::drop_bucket(std::uint16_t bucket) noexcept {
  const Bucket& dropped = buckets_[bucket];
  if (dropped.prev != kEmpty) {
    buckets_[dropped.prev].next = dropped.next;
  } else {
    smallest_ = dropped.next;
  }
  if (dropped.next != kEmpty) {
    buckets_[dropped.next].prev = dropped.prev;
  }
  buckets_[bucket].next = free_bucket_;
  free_bucket_ = bucket;
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

}  // namespace sluice::telemetry
