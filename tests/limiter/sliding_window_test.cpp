#include "limiter/sliding_window.hpp"

#include <gtest/gtest.h>

#include "tests/support/drive.hpp"
#include "tests/support/manual_clock.hpp"

namespace sluice::limiter {
namespace {

using namespace std::chrono_literals;
using test::admit_all;
using test::at;
using test::request;

void send(const SlidingWindow& window, SlidingWindow::State& state, TimePoint now, int count) {
  for (int i = 0; i < count; ++i) {
    ASSERT_TRUE(request(window, state, now).admitted) << "request " << i;
  }
}

// The worked examples give the counters as they stand; such counts cannot all have been
// admitted by one limiter with that limit (the previous window weighs too much early in the
// current one), so the state is set directly, as the examples do.
SlidingWindow::State counters(TimePoint window_start, Duration window, Permits previous,
                              Permits current) {
  return {.window = static_cast<std::uint32_t>(period_index(window_start, window)),
          .previous = previous,
          .current = current};
}

TEST(SlidingWindow, RejectsSeed001sExampleAtElevenPointSevenFive) {
  // Limit 10/min; 9 requests in [0:00, 1:00), 4 in [1:00, 2:00); at 1:15 (25% into the window)
  // the next request makes the estimate 9·(1 − 0.25) + 4 + 1 = 11.75 > 10: rejected.
  const SlidingWindow window({.limit = 10, .window = 1min});
  SlidingWindow::State state = counters(at(60s), 1min, 9, 4);
  const Verdict verdict = request(window, state, at(75s));
  EXPECT_FALSE(verdict.admitted);
  // Admitted once 9·(1 − e/60) + 5 <= 10, at e = 26.666…67 s: 11.666…67 s after 1:15.
  EXPECT_EQ(verdict.retry_after, 11'666'666'667ns);
  EXPECT_FALSE(request(window, state, at(60s + 26'666'666'666ns)).admitted);
  EXPECT_TRUE(request(window, state, at(60s + 26'666'666'667ns)).admitted);
}

TEST(SlidingWindow, AdmitsCloudflaresExampleAtFortyNinePointFive) {
  // Limit 50/min; 42 requests in the previous minute, 17 so far in this one; 15 s in, the next
  // request brings the estimate to 42·(45/60) + 18 = 49.5 <= 50: admitted. One more is 50.5.
  const SlidingWindow window({.limit = 50, .window = 1min});
  SlidingWindow::State state = counters(at(60s), 1min, 42, 17);
  EXPECT_EQ(window.status(state, at(75s)).remaining, 1U);  // floor(50 − 48.5)
  EXPECT_TRUE(request(window, state, at(75s)).admitted);
  EXPECT_EQ(window.status(state, at(75s)).remaining, 0U);  // floor(50 − 49.5)
  EXPECT_FALSE(request(window, state, at(75s)).admitted);
}

TEST(SlidingWindow, WeighsThePreviousWindowDownAsTheCurrentOneFills) {
  const SlidingWindow window({.limit = 10, .window = 1min});
  SlidingWindow::State state;
  send(window, state, at(30s), 9);
  // 1:05: 9·55/60 = 8.25, so one more fits (9.25) and a second does not (10.25).
  EXPECT_EQ(admit_all(window, state, at(65s)), 1);
  // 1:40: 9·20/60 = 3 + 1 already: six more fit.
  EXPECT_EQ(admit_all(window, state, at(100s)), 6);
}

TEST(SlidingWindow, DoesNotLetTwiceTheLimitThroughAtAnEdge) {
  const SlidingWindow window({.limit = 10, .window = 1min});
  SlidingWindow::State state;
  send(window, state, at(59s), 10);
  // 1 s into the next window the previous one still weighs 10·59/60 = 9.83.
  EXPECT_EQ(admit_all(window, state, at(61s)), 0);
  EXPECT_EQ(admit_all(window, state, at(66s)), 1);  // 10·54/60 = 9 → one fits
}

TEST(SlidingWindow, ForgetsEverythingAfterTwoWindows) {
  const SlidingWindow window({.limit = 5, .window = 1s});
  SlidingWindow::State state;
  send(window, state, at(100ms), 5);
  EXPECT_EQ(window.fresh_at(state, at(100ms)), at(2s));
  EXPECT_EQ(window.status(state, at(1999ms)).reset, 1ms);
  EXPECT_EQ(admit_all(window, state, at(2s)), 5);
}

TEST(SlidingWindow, CountsCostInPermits) {
  const SlidingWindow window({.limit = 10, .window = 1s});
  SlidingWindow::State state;
  EXPECT_TRUE(request(window, state, at(0s), 6).admitted);
  EXPECT_FALSE(request(window, state, at(0s), 5).admitted);
  EXPECT_TRUE(request(window, state, at(0s), 4).admitted);
  // Half-way through the next window: 10·0.5 = 5, so a cost of 5 fits exactly, 6 does not.
  EXPECT_FALSE(request(window, state, at(1500ms), 6).admitted);
  EXPECT_TRUE(request(window, state, at(1500ms), 5).admitted);
  EXPECT_FALSE(request(window, state, at(0s), 11).admitted);
}

TEST(SlidingWindow, DelayModeHoldsUntilTheEstimateHasRoom) {
  const SlidingWindow window({.limit = 4, .window = 1s});
  SlidingWindow::State state;
  const Policy policy = test::delay(3s);
  send(window, state, at(0s), 4);
  // Window 1 starts with previous = 4: 4·(1 − e) + 1 <= 4 at e = 0.25 s.
  EXPECT_EQ(request(window, state, at(0s), 1, policy).hold, 1250ms);
  // Next: 4·(1 − e) + 2 <= 4 at e = 0.5 s.
  EXPECT_EQ(request(window, state, at(0s), 1, policy).hold, 1500ms);
  EXPECT_EQ(window.status(state, at(0s)).remaining, 0U);
}

TEST(SlidingWindow, ClockSteppingBackNeverOverAdmits) {
  test::expect_clock_step_back_is_safe(SlidingWindow({.limit = 3, .window = 1s}), at(5500ms),
                                       at(4s), 3);
}

TEST(SlidingWindow, HandlesTheLargestLimitAndALongWindow) {
  constexpr Permits kMax = std::numeric_limits<Permits>::max();
  const SlidingWindow window({.limit = kMax, .window = 24h});
  SlidingWindow::State state;
  const TimePoint day = TimePoint(std::chrono::days(20'000));  // a day boundary
  EXPECT_TRUE(request(window, state, day, kMax).admitted);
  EXPECT_FALSE(request(window, state, day + 12h, 1).admitted);
  // Half-way through the next day the previous day weighs kMax/2.
  EXPECT_TRUE(request(window, state, day + 36h, kMax / 2).admitted);
  EXPECT_FALSE(request(window, state, day + 36h, 2).admitted);
}

}  // namespace
}  // namespace sluice::limiter
