#pragma once

#include <cstddef>
#include <new>

namespace sluice::proxy {

/// Small blocks recycled per thread. A request's header fields are allocated and freed on one
/// event loop, so after warm-up parsing or building a header costs no malloc (and no lock).
/// Blocks freed on another thread join that thread's cache; each size class keeps a bounded
/// number of spare blocks, the rest go back to the heap.
class BlockCache {
 public:
  static constexpr std::size_t kGranule = 64;
  static constexpr std::size_t kClasses = 8;  ///< Blocks of 64, 128, ... 512 bytes.
  static constexpr std::size_t kLargest = kGranule * kClasses;
  static constexpr std::size_t kMaxSparePerClass = 1024;

  BlockCache() = default;
  BlockCache(const BlockCache&) = delete;
  BlockCache& operator=(const BlockCache&) = delete;
  BlockCache(BlockCache&&) = delete;
  BlockCache& operator=(BlockCache&&) = delete;
  ~BlockCache();

  /// A block of at least `bytes` from this thread's cache (or the heap).
  static void* take(std::size_t bytes) {
    BlockCache* cache = local();
    return cache != nullptr ? cache->allocate(bytes) : ::operator new(bytes);
  }
  static void put(void* pointer, std::size_t bytes) noexcept {
    BlockCache* cache = local();
    if (cache != nullptr) {
      cache->deallocate(pointer, bytes);
    } else {
      ::operator delete(pointer);
    }
  }

 private:
  /// This thread's cache; null once it is destroyed at thread exit (a static freed later must
  /// not touch it).
  static BlockCache* local() noexcept {
    if (gone_) {
      return nullptr;
    }
    thread_local BlockCache cache;
    return &cache;
  }

  void* allocate(std::size_t bytes) {
    if (bytes > kLargest) {
      return ::operator new(bytes);
    }
    const std::size_t index = class_of(bytes);
    if (FreeBlock* block = spare_[index]) {
      spare_[index] = block->next;
      --count_[index];
      return block;
    }
    return ::operator new((index + 1) * kGranule);
  }

  void deallocate(void* pointer, std::size_t bytes) noexcept {
    if (bytes > kLargest) {
      ::operator delete(pointer);
      return;
    }
    const std::size_t index = class_of(bytes);
    if (count_[index] >= kMaxSparePerClass) {
      ::operator delete(pointer);
      return;
    }
    auto* block = static_cast<FreeBlock*>(pointer);
    block->next = spare_[index];
    spare_[index] = block;
    ++count_[index];
  }

  struct FreeBlock {
    FreeBlock* next;
  };
  static constexpr std::size_t class_of(std::size_t bytes) noexcept {
    return bytes == 0 ? 0 : (bytes - 1) / kGranule;
  }

  static inline thread_local bool gone_ = false;
  FreeBlock* spare_[kClasses] = {};
  std::size_t count_[kClasses] = {};
};

/// A standard allocator over this thread's BlockCache, for Beast's basic_fields.
template <class T>
struct RecyclingAllocator {
  using value_type = T;

  RecyclingAllocator() noexcept = default;
  template <class U>
  RecyclingAllocator(const RecyclingAllocator<U>& /*other*/) noexcept {}  // NOLINT: rebinding

  T* allocate(std::size_t n) {
    static_assert(alignof(T) <= __STDCPP_DEFAULT_NEW_ALIGNMENT__);
    return static_cast<T*>(BlockCache::take(n * sizeof(T)));
  }
  void deallocate(T* pointer, std::size_t n) noexcept { BlockCache::put(pointer, n * sizeof(T)); }

  template <class U>
  bool operator==(const RecyclingAllocator<U>& /*other*/) const noexcept {
    return true;
  }
};

}  // namespace sluice::proxy
