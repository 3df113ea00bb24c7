// The traffic history by explicit samples: per-second rates from cumulative counts, late ticks
// spread over their seconds, ten minutes kept and no more, and only what is new when asked.
#include "proxy/telemetry/traffic_history.hpp"

#include <gtest/gtest.h>

#include <numeric>
#include <string>
#include <utility>
#include <vector>

namespace sluice::telemetry {
namespace {

using Totals = std::vector<std::pair<std::string, TrafficHistory::Counts>>;

constexpr std::size_t kAllowed = static_cast<std::size_t>(MetricDecision::allowed);
constexpr std::size_t kLimited = static_cast<std::size_t>(MetricDecision::limited);

TrafficHistory::Counts counts(std::uint64_t allowed, std::uint64_t limited) {
  TrafficHistory::Counts all{};
  all[kAllowed] = allowed;
  all[kLimited] = limited;
  return all;
}

TEST(TrafficHistory, ShowsEachSecondsGrowthByRouteAndDecision) {
  TrafficHistory history;
  history.sample(Totals{{"api", counts(100, 5)}});  // the baseline: what came before
  history.sample(Totals{{"api", counts(110, 5)}});
  history.sample(Totals{{"api", counts(130, 8)}, {"login", counts(1, 0)}});
  const TrafficHistory::Window window = history.since(0);
  EXPECT_EQ(window.newest, 3U);
  ASSERT_EQ(window.seconds, 3U);
  ASSERT_EQ(window.routes.size(), 2U);
  EXPECT_EQ(window.routes[0].route, "api");
  EXPECT_EQ(window.routes[0].decisions[kAllowed], (std::vector<std::uint32_t>{0, 10, 20}));
  EXPECT_EQ(window.routes[0].decisions[kLimited], (std::vector<std::uint32_t>{0, 0, 3}));
  // A route seen for the first time starts from its baseline, not from its whole count.
  EXPECT_EQ(window.routes[1].route, "login");
  EXPECT_EQ(window.routes[1].decisions[kAllowed], (std::vector<std::uint32_t>{0, 0, 0}));
}

TEST(TrafficHistory, SpreadsALateTickOverTheSecondsItCovers) {
  TrafficHistory history;
  history.sample(Totals{{"api", counts(0, 0)}});
  history.sample(Totals{{"api", counts(10, 0)}}, 3);  // 3 seconds late: 4 + 3 + 3
  const TrafficHistory::Window window = history.since(1);
  EXPECT_EQ(window.newest, 4U);
  EXPECT_EQ(window.routes[0].decisions[kAllowed], (std::vector<std::uint32_t>{4, 3, 3}));
}

TEST(TrafficHistory, GivesOnlyTheSecondsAfterTheOneAskedFrom) {
  TrafficHistory history;
  history.sample(Totals{{"api", counts(0, 0)}});
  for (std::uint64_t second = 1; second <= 5; ++second) {
    history.sample(Totals{{"api", counts(second * second, 0)}});
  }
  const TrafficHistory::Window window = history.since(4);
  EXPECT_EQ(window.newest, 6U);
  EXPECT_EQ(window.routes[0].decisions[kAllowed], (std::vector<std::uint32_t>{7, 9}));
  EXPECT_EQ(history.since(6).seconds, 0U);
  EXPECT_EQ(history.since(99).seconds, 0U);  // a page from before a restart gets nothing new
}

TEST(TrafficHistory, KeepsTenMinutesAndNoMore) {
  TrafficHistory history;
  history.sample(Totals{{"api", counts(0, 0)}});
  std::uint64_t total = 0;
  for (std::uint64_t second = 1; second <= TrafficHistory::kSeconds + 50; ++second) {
    total += second;
    history.sample(Totals{{"api", counts(total, 0)}});
  }
  const TrafficHistory::Window window = history.since(0);
  ASSERT_EQ(window.seconds, TrafficHistory::kSeconds);
  const std::vector<std::uint32_t>& allowed = window.routes[0].decisions[kAllowed];
  ASSERT_EQ(allowed.size(), TrafficHistory::kSeconds);
  EXPECT_EQ(allowed.front(), 51U);  // the oldest kept: second 51's
  EXPECT_EQ(allowed.back(), TrafficHistory::kSeconds + 50);
}

TEST(TrafficHistory, ShowsZerosForARouteNoLongerCounted) {
  TrafficHistory history;
  history.sample(Totals{{"old", counts(0, 0)}});
  history.sample(Totals{{"old", counts(7, 0)}});
  history.sample(Totals{});  // a reload removed the route: its series stays, idle
  const TrafficHistory::Window window = history.since(0);
  ASSERT_EQ(window.routes.size(), 1U);
  EXPECT_EQ(window.routes[0].decisions[kAllowed], (std::vector<std::uint32_t>{0, 7, 0}));
}

}  // namespace
}  // namespace sluice::telemetry
