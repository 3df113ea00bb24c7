// The global operator new, replaced to count its calls (tests/support/counted_new.hpp).
#include "tests/support/counted_new.hpp"

#include <atomic>
#include <cstdlib>
#include <new>

namespace {
std::atomic<std::size_t> g_allocations{0};
}  // namespace

// GCC 12 at -O2 inlines these into callers and then mistakes the replaced pair for a
// malloc/operator-delete mismatch. The pair is consistent: both sides use malloc and free.
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"

void* operator new(std::size_t size) {
  g_allocations.fetch_add(1, std::memory_order_relaxed);
  if (void* memory = std::malloc(size == 0 ? 1 : size)) {
    return memory;
  }
  throw std::bad_alloc();
}
void operator delete(void* memory) noexcept { std::free(memory); }
void operator delete(void* memory, std::size_t /*size*/) noexcept { std::free(memory); }

namespace sluice::test {

std::size_t allocations() noexcept { return g_allocations.load(std::memory_order_relaxed); }

}  // namespace sluice::test
