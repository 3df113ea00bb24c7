#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <memory>
#include <vector>

namespace sluice::io {

/// What an event loop trims a few times a second: a SparePool, whatever it holds.
class SpareStock {
 public:
  SpareStock() = default;
  SpareStock(const SpareStock&) = delete;
  SpareStock& operator=(const SpareStock&) = delete;
  SpareStock(SpareStock&&) = delete;
  SpareStock& operator=(SpareStock&&) = delete;
  virtual ~SpareStock() = default;

  /// Ends a period: frees the spares beyond what the period lent at once (at least the floor).
  virtual void trim() = 0;
};

/// Objects recycled within one event loop (so no lock): a borrower takes one and its lease
/// gives it back, so that after warm-up borrowing allocates nothing. The pool holds, lent and
/// spare together, as many objects as were lent at once lately (in this period and the one
/// before; trim() ends a period, a loop calls it every 250 ms), at least `floor` and at most
/// `cap`: a loop with 500 calls in flight allocates nothing for them, and what a burst needed
/// is freed at the end of the first period without it. The last given back is lent first (its
/// memory is the likeliest in cache). An object given back is kept only after its `recycle()`, when
/// T has one, has run (for T to let go of storage a large use made grow).
template <class T>
class SparePool final : public SpareStock {
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

  SparePool(std::size_t floor, std::size_t cap) : floor_(floor), cap_(std::max(cap, floor)) {}

  /// A kept object, or a new one (default-initialized: a buffer's bytes are not cleared).
  Lease borrow() {
    ++lent_;
    peak_ = std::max(peak_, lent_);
    if (spare_.empty()) {
      return Lease(*this, std::make_unique_for_overwrite<T>());
    }
    std::unique_ptr<T> item = std::move(spare_.back());
    spare_.pop_back();
    return Lease(*this, std::move(item));
  }

  void trim() override {
    previous_peak_ = peak_;
    peak_ = lent_;
    const std::size_t held = held_at_most();
    while (!spare_.empty() && lent_ + spare_.size() > held) {
      spare_.pop_back();
    }
  }

  /// Objects kept for the next borrowers.
  std::size_t spares() const noexcept { return spare_.size(); }

 private:
  std::size_t held_at_most() const noexcept {
    return std::clamp(std::max(peak_, previous_peak_), floor_, cap_);
  }

  void give_back(std::unique_ptr<T> item) {
    --lent_;
    if (lent_ + spare_.size() < held_at_most()) {
      if constexpr (requires(T& kept) { kept.recycle(); }) {
        item->recycle();
      }
      spare_.push_back(std::move(item));
    }
  }

  std::size_t floor_;
  std::size_t cap_;
  std::size_t lent_ = 0;
  std::size_t peak_ = 0;           ///< Most lent at once in this period.
  std::size_t previous_peak_ = 0;  ///< In the period before.
  std::vector<std::unique_ptr<T>> spare_;
};

/// The buffers that carry bodies between a client and an upstream: a relay borrows one for its
/// request.
inline constexpr std::size_t kChunkBytes = 16 * 1024;
using BodyChunk = std::array<char, kChunkBytes>;
using ChunkPool = SparePool<BodyChunk>;

}  // namespace sluice::io
