#pragma once

#include <atomic>
#include <thread>

namespace sluice::limiter {

/// Test-and-test-and-set lock for critical sections of a few dozen nanoseconds (one shard's
/// table lookup). Yields after spinning a while, so a preempted holder does not burn a core.
/// Meets the Lockable requirements.
class SpinLock {
 public:
  void lock() noexcept {
    for (int spins = 0;; ++spins) {
      if (!locked_.exchange(true, std::memory_order_acquire)) {
        return;
      }
      while (locked_.load(std::memory_order_relaxed)) {
        if (++spins < 64) {
          pause();
        } else {
          std::this_thread::yield();
        }
      }
    }
  }

  bool try_lock() noexcept {
    return !locked_.load(std::memory_order_relaxed) &&
           !locked_.exchange(true, std::memory_order_acquire);
  }

  void unlock() noexcept { locked_.store(false, std::memory_order_release); }

 private:
  static void pause() noexcept {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
  }

  std::atomic<bool> locked_{false};
};

}  // namespace sluice::limiter
