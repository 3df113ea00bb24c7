#pragma once
// Waiting for a state the proxy reaches on its own time (a sweep, a timer) without a fixed
// sleep: the test goes on as soon as the state is there, and fails if it never comes.
#include <chrono>
#include <thread>

namespace sluice::test {

/// Whether `condition()` holds within `limit`, asked every millisecond.
template <class Condition>
bool holds_within(std::chrono::milliseconds limit, Condition condition) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  while (!condition()) {
    if (std::chrono::steady_clock::now() > deadline) {
      return false;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return true;
}

}  // namespace sluice::test
