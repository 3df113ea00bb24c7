// Several threads hammering one key admit exactly what the algorithm allows. Time is frozen, so
// the exact count is known; run under ThreadSanitizer too (the tsan preset).
#include <gtest/gtest.h>

#include <array>
#include <atomic>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "limiter/decide.hpp"
#include "limiter/key_hash.hpp"
#include "limiter/make_limiter.hpp"
#include "tests/support/manual_clock.hpp"

namespace sluice::limiter {
namespace {

using namespace std::chrono_literals;
using test::at;

constexpr int kThreads = 4;
constexpr int kAttemptsPerThread = 20'000;

struct Case {
  const char* name;
  LimiterOptions options;
  int expected;
};

std::vector<Case> cases() {
  const Rate rate{.permits = 100, .period = 1s};
  return {
      {"fixed_window",
       {.algorithm = AlgorithmKind::fixed_window, .limit = 1000, .window = 1h},
       1000},
      {"sliding_window",
       {.algorithm = AlgorithmKind::sliding_window, .limit = 1000, .window = 1h},
       1000},
      {"sliding_log", {.algorithm = AlgorithmKind::sliding_log, .limit = 1000, .window = 1h}, 1000},
      {"wheel",
       {.algorithm = AlgorithmKind::wheel, .limit = 1000, .window = 1h, .slots = 60},
       1000},
      {"token_bucket",
       {.algorithm = AlgorithmKind::token_bucket, .rate = rate, .burst = 1000},
       1000},
      {"token_bucket warmup",
       {.algorithm = AlgorithmKind::token_bucket, .rate = rate, .warmup = 10s},
       1},
      {"leaky_bucket",
       {.algorithm = AlgorithmKind::leaky_bucket, .rate = rate, .burst = 999},
       1000},
      {"concurrency", {.algorithm = AlgorithmKind::concurrency, .limit = 1000}, 1000},
  };
}

int hammer(const std::function<bool()>& attempt) {
  std::atomic<int> admitted{0};
  std::atomic<bool> go{false};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&] {
      while (!go.load(std::memory_order_acquire)) {
      }
      for (int i = 0; i < kAttemptsPerThread; ++i) {
        if (attempt()) {
          admitted.fetch_add(1, std::memory_order_relaxed);
        }
      }
    });
  }
  go.store(true, std::memory_order_release);
  for (auto& thread : threads) {
    thread.join();
  }
  return admitted.load();
}

TEST(ConcurrentDecisions, ThreadsOnOneKeyAdmitExactlyTheLimit) {
  for (const Case& c : cases()) {
    const auto limiter = make_limiter(c.options);
    const KeyHash key = hash_key("hot-key");
    const int admitted = hammer([&] { return limiter->decide(key, at(0s), 1).verdict.admitted; });
    EXPECT_EQ(admitted, c.expected) << c.name;
  }
}

TEST(ConcurrentDecisions, AllOrNothingHoldsAcrossThreadsAndLockOrders) {
  // Two limiters charged in opposite orders by different threads: no deadlock, and the
  // tighter one bounds both exactly.
  const auto wide =
      make_limiter({.algorithm = AlgorithmKind::fixed_window, .limit = 5000, .window = 1h});
  const auto tight =
      make_limiter({.algorithm = AlgorithmKind::sliding_log, .limit = 700, .window = 1h});
  const KeyHash key = hash_key("hot-key");
  std::atomic<int> turn{0};
  const int admitted = hammer([&] {
    const bool flip = (turn.fetch_add(1, std::memory_order_relaxed) & 1) != 0;
    const std::array<Charge, 2> charges{Charge{flip ? wide.get() : tight.get(), key, 1},
                                        Charge{flip ? tight.get() : wide.get(), key, 1}};
    std::array<Outcome, 2> outcomes{};
    return decide(charges, at(0s), outcomes).admitted;
  });
  EXPECT_EQ(admitted, 700);
  EXPECT_EQ(wide->peek(key, at(0s)).remaining, 5000U - 700U);
}

TEST(ConcurrentDecisions, ManyKeysOnManyThreadsStayIndependent) {
  const auto limiter = make_limiter(
      {.algorithm = AlgorithmKind::token_bucket, .rate = {.permits = 1, .period = 1h}, .burst = 3});
  std::atomic<int> next{0};
  const int admitted = hammer([&] {
    const int n = next.fetch_add(1, std::memory_order_relaxed) % 5000;
    std::string name = "k";
    name += std::to_string(n);
    return limiter->decide(hash_key(name), at(0s), 1).verdict.admitted;
  });
  EXPECT_EQ(admitted, 5000 * 3);
  EXPECT_EQ(limiter->stats().keys, 5000U);
}

/// Costs charged after responses on one key from several threads, each admission checking the
/// budget without consuming (SPEC §9's `cost: response`): no charge is lost, and once the budget
/// is spent nothing more is admitted.
TEST(ConcurrentDecisions, ChargesAfterTheResponseFromManyThreadsAreNeverLost) {
  for (const Case& c : cases()) {
    if (c.options.algorithm == AlgorithmKind::concurrency) {
      continue;  // its permits are held, never charged after
    }
    const auto limiter = make_limiter(c.options);
    const KeyHash key = hash_key("hot-key");
    std::atomic<int> charged{0};
    const int admitted = hammer([&] {
      const std::array<Charge, 1> admission{
          Charge{.limiter = limiter.get(), .key = key, .cost = 1, .settled_later = true}};
      std::array<Outcome, 1> outcome{};
      if (!decide(admission, at(0s), outcome).admitted) {
        return false;
      }
      limiter->charge(key, at(0s), 3);
      charged.fetch_add(3, std::memory_order_relaxed);
      return true;
    });
    // Each admission saw the charges before it: at most one in flight per thread past the budget.
    EXPECT_GE(admitted * 3, c.expected) << c.name;
    EXPECT_LE(admitted, (c.expected + 2) / 3 + kThreads) << c.name;
    EXPECT_EQ(charged.load(), admitted * 3) << c.name;
    EXPECT_EQ(limiter->peek(key, at(0s)).remaining, 0U) << c.name;
  }
}

}  // namespace
}  // namespace sluice::limiter
