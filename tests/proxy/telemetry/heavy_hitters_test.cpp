#include "proxy/telemetry/heavy_hitters.hpp"

#include <gtest/gtest.h>

#include <string>

#include "tests/support/manual_clock.hpp"

namespace sluice::telemetry {
namespace {

using namespace std::chrono_literals;

/// Counts `times` requests of `key` (described as "key-N") at `limiter` on `loop`.
void count(HeavyHitters& hitters, std::size_t loop, std::size_t limiter, limiter::KeyHash key,
           int times, limiter::TimePoint now, int limited = 0) {
  for (int i = 0; i < times; ++i) {
    hitters.recording(loop, now).count(limiter, key, i < limited, [key](HeavyKeyText& about) {
      about.assign("key-" + std::to_string(key));
    });
  }
}

TEST(HeavyHitters, MergesTheLoopsAndSortsByRequests) {
  test::ManualClock clock;
  HeavyHitters hitters(2, 3, 8);
  count(hitters, 0, 0, 1, 5, clock.now(), 2);
  count(hitters, 1, 0, 1, 4, clock.now(), 1);
  count(hitters, 2, 0, 2, 7, clock.now());
  count(hitters, 1, 0, 3, 1, clock.now());
  count(hitters, 0, 1, 9, 50, clock.now());  // another limiter: not mixed in
  const std::vector<HeaviestKey> top = hitters.heaviest(0, 10, clock.now());
  ASSERT_EQ(top.size(), 3U);
  EXPECT_EQ(top[0].text, "key-1");
  EXPECT_EQ(top[0].requests, 9U);
  EXPECT_EQ(top[0].limited, 3U);
  EXPECT_EQ(top[1].text, "key-2");
  EXPECT_EQ(top[1].requests, 7U);
  EXPECT_EQ(top[2].text, "key-3");
  EXPECT_EQ(top[2].requests, 1U);
  EXPECT_EQ(hitters.heaviest(0, 2, clock.now()).size(), 2U);
  EXPECT_EQ(hitters.heaviest(1, 10, clock.now()).at(0).requests, 50U);
}

TEST(HeavyHitters, OrdersTiesByText) {
  test::ManualClock clock;
  HeavyHitters hitters(1, 1, 8);
  for (const limiter::KeyHash key : {7U, 3U, 5U}) {
    count(hitters, 0, 0, key, 2, clock.now());
  }
  const std::vector<HeaviestKey> top = hitters.heaviest(0, 10, clock.now());
  ASSERT_EQ(top.size(), 3U);
  EXPECT_EQ(top[0].text, "key-3");
  EXPECT_EQ(top[1].text, "key-5");
  EXPECT_EQ(top[2].text, "key-7");
}

TEST(HeavyHitters, SlidesOverTheLastMinuteInTenSecondSteps) {
  test::ManualClock clock;
  HeavyHitters hitters(1, 2, 8);
  count(hitters, 0, 0, 1, 3, clock.now());
  clock.advance(25s);
  count(hitters, 1, 0, 1, 4, clock.now());
  count(hitters, 0, 0, 2, 1, clock.now());
  EXPECT_EQ(hitters.heaviest(0, 10, clock.now()).at(0).requests, 7U);
  // 59 s on: the first window (0-10 s) is still among the last six.
  clock.set(test::at(59s));
  EXPECT_EQ(hitters.heaviest(0, 10, clock.now()).at(0).requests, 7U);
  // 60 s on, it has slid out, even before any loop counts again.
  clock.set(test::at(60s));
  EXPECT_EQ(hitters.heaviest(0, 10, clock.now()).at(0).requests, 4U);
  // A loop counting in a window it held a minute ago starts that window afresh.
  count(hitters, 1, 0, 2, 2, clock.now());
  clock.set(test::at(65s));
  std::vector<HeaviestKey> top = hitters.heaviest(0, 10, clock.now());
  ASSERT_EQ(top.size(), 2U);
  EXPECT_EQ(top[0].text, "key-1");
  EXPECT_EQ(top[0].requests, 4U);
  EXPECT_EQ(top[1].text, "key-2");
  EXPECT_EQ(top[1].requests, 3U);
  clock.set(test::at(85s));  // the 20-30 s window is out too
  top = hitters.heaviest(0, 10, clock.now());
  ASSERT_EQ(top.size(), 1U);
  EXPECT_EQ(top[0].requests, 2U);
  clock.set(test::at(120s));
  EXPECT_TRUE(hitters.heaviest(0, 10, clock.now()).empty());
}

TEST(HeavyHitters, StatesItsMemory) {
  const HeavyHitters hitters(3, 2, 64);
  // Six windows of 64 keys on each of two loops: each key its entry (mostly inline text), its
  // links, a bucket and two index slots.
  EXPECT_GT(hitters.memory_per_limiter(), 2 * 6 * 64 * sizeof(HeavyKey));
  EXPECT_LT(hitters.memory_per_limiter(), 2 * 6 * 64 * (sizeof(HeavyKey) + 56));
}

}  // namespace
}  // namespace sluice::telemetry
