#pragma once

#include <cstddef>
#include <memory>
#include <span>
#include <vector>

namespace sluice::io {

/// Fixed-size buffers that carry bodies between a client and an upstream, recycled within one
/// event loop (so no lock): a relay borrows one for its request and gives it back, and after
/// warm-up no request allocates one. At most `max_kept` spare buffers stay allocated.
class ChunkPool {
 public:
  static constexpr std::size_t kChunkBytes = 16 * 1024;

  /// A borrowed buffer; it goes back to its pool when this goes away.
  class Lease {
   public:
    Lease(ChunkPool& pool, std::unique_ptr<char[]> chunk)
        : pool_(&pool), chunk_(std::move(chunk)) {}
    Lease(const Lease&) = delete;
    Lease& operator=(const Lease&) = delete;
    Lease(Lease&& other) noexcept = default;
    Lease& operator=(Lease&&) = delete;
    ~Lease() {
      if (chunk_) {
        pool_->give_back(std::move(chunk_));
      }
    }
    std::span<char> bytes() const noexcept { return {chunk_.get(), kChunkBytes}; }

   private:
    ChunkPool* pool_;
    std::unique_ptr<char[]> chunk_;
  };

  explicit ChunkPool(std::size_t max_kept) : max_kept_(max_kept) {}

  Lease borrow() {
    if (spare_.empty()) {
      return Lease(*this, std::make_unique_for_overwrite<char[]>(kChunkBytes));
    }
    std::unique_ptr<char[]> chunk = std::move(spare_.back());
    spare_.pop_back();
    return Lease(*this, std::move(chunk));
  }

 private:
  void give_back(std::unique_ptr<char[]> chunk) {
    if (spare_.size() < max_kept_) {
      spare_.push_back(std::move(chunk));
    }
  }

  std::size_t max_kept_;
  std::vector<std::unique_ptr<char[]>> spare_;
};

}  // namespace sluice::io
