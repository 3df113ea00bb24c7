#pragma once

#include <cstddef>

namespace sluice::test {

/// Calls of the global operator new so far. The binary that links tests/support/counted_new.cpp
/// has its operator new replaced to count them: a binary of its own, kept apart from the other
/// tests.
std::size_t allocations() noexcept;

/// The calls of operator new that `work()` made.
template <class Work>
std::size_t allocations_during(const Work& work) {
  const std::size_t before = allocations();
  work();
  return allocations() - before;
}

}  // namespace sluice::test
