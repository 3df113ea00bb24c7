#pragma once

#include <array>
#include <cstddef>
#include <memory>
#include <vector>

namespace sluice::io {

/// Objects recycled within one event loop (so no lock): a borrower takes one and its lease
/// gives it back, so that after warm-up borrowing allocates nothing. At most `max_kept` spares
/// stay allocated; the last given back is lent first (its memory is the likeliest in cache).
/// An object given back is kept only after its `recycle()`, when T has one, has run (for T to
/// let go of storage a large use made grow).
template <class T>
class SparePool {
 public:
  /// A borrowed object; it goes back to its pool when this goes away.
  class Lease {
   public:
    Lease(SparePool& pool, std::unique_ptr<T> item) : pool_(&pool), item_(std::move(item)) {}
    Lease(const Lease&) = delete;
    Lease& operator=(const Lease&) = delete;
    Lease(Lease&& other) noexcept = default;
    Lease& operator=(Lease&&) = delete;
    ~Lease() {
      if (item_) {
        pool_->give_back(std::move(item_));
      }
    }
    T& operator*() const noexcept { return *item_; }
    T* operator->() const noexcept { return item_.get(); }

   private:
    SparePool* pool_;
    std::unique_ptr<T> item_;
  };

  explicit SparePool(std::size_t max_kept) : max_kept_(max_kept) {}

  /// A kept object, or a new one (default-initialized: a buffer's bytes are not cleared).
  Lease borrow() {
    if (spare_.empty()) {
      return Lease(*this, std::make_unique_for_overwrite<T>());
    }
    std::unique_ptr<T> item = std::move(spare_.back());
    spare_.pop_back();
    return Lease(*this, std::move(item));
  }

  /// Objects kept for the next borrowers.
  std::size_t spares() const noexcept { return spare_.size(); }

 private:
  void give_back(std::unique_ptr<T> item) {
    if (spare_.size() < max_kept_) {
      if constexpr (requires(T& kept) { kept.recycle(); }) {
        item->recycle();
      }
      spare_.push_back(std::move(item));
    }
  }

  std::size_t max_kept_;
  std::vector<std::unique_ptr<T>> spare_;
};

/// The buffers that carry bodies between a client and an upstream: a relay borrows one for its
/// request.
inline constexpr std::size_t kChunkBytes = 16 * 1024;
using BodyChunk = std::array<char, kChunkBytes>;
using ChunkPool = SparePool<BodyChunk>;

}  // namespace sluice::io
