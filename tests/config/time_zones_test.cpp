// The system's time zone database as calendar windows read it: local midnights of a zone with
// clock changes, exact to the second, and names that are not zones.
#include "config/time_zones.hpp"

#include <gtest/gtest.h>

namespace sluice::config {
namespace {

using namespace std::chrono;
using namespace std::chrono_literals;

limiter::TimePoint utc(year_month_day date, seconds time_of_day = 0s) {
  return limiter::TimePoint(
      duration_cast<limiter::Duration>(sys_days(date).time_since_epoch() + time_of_day));
}

TEST(TimeZones, BerlinsMonthsAndDaysStartAtItsMidnight) {
  std::string error;
  const limiter::TimeZone* berlin = time_zone_named("Europe/Berlin", error);
  ASSERT_NE(berlin, nullptr) << error;
  EXPECT_EQ(berlin->name(), "Europe/Berlin");
  EXPECT_EQ(time_zone_named("Europe/Berlin", error), berlin);  // one instance per zone
  const limiter::CalendarPeriods months(limiter::Calendar::month, berlin);
  // 23:30 UTC on 31 October 2026 is 00:30 on 1 November in Berlin (CET, UTC+1).
  const std::int64_t november = months.index(utc(2026y / October / 31, 23h + 30min));
  EXPECT_EQ(months.start(november), utc(2026y / October / 31, 23h));
  EXPECT_EQ(months.start(november + 1), utc(2026y / November / 30, 23h));
  // Summer time: July begins at 22:00 UTC on 30 June (CEST, UTC+2).
  EXPECT_EQ(months.start(months.index(utc(2026y / July / 15))), utc(2026y / June / 30, 22h));
  // 28 March 2027, when clocks go from 02:00 to 03:00, has 23 hours; 31 October 2027, 25.
  const limiter::CalendarPeriods local_days(limiter::Calendar::day, berlin);
  const std::int64_t spring = local_days.index(utc(2027y / March / 28, 12h));
  EXPECT_EQ(local_days.start(spring + 1) - local_days.start(spring), 23h);
  const std::int64_t autumn = local_days.index(utc(2027y / October / 31, 12h));
  EXPECT_EQ(local_days.start(autumn + 1) - local_days.start(autumn), 25h);
}

TEST(TimeZones, ZonesWhoseMidnightIsSkipped) {
  // America/Havana's clocks went from 00:00 to 01:00 on 13 March 2022: that day began at 01:00
  // local, 05:00 UTC.
  std::string error;
  const limiter::TimeZone* havana = time_zone_named("America/Havana", error);
  ASSERT_NE(havana, nullptr) << error;
  const limiter::CalendarPeriods local_days(limiter::Calendar::day, havana);
  EXPECT_EQ(local_days.start(local_days.index(utc(2022y / March / 13, 12h))),
            utc(2022y / March / 13, 5h));
}

TEST(TimeZones, NamesThatAreNoZone) {
  for (const char* name : {"Europe/Berlín", "CEST", "", "../../etc/passwd"}) {
    std::string error;
    EXPECT_EQ(time_zone_named(name, error), nullptr) << name;
    EXPECT_EQ(error, "\"" + std::string(name) +
                         "\" is not a time zone of the system's database (an IANA name: "
                         "Europe/Berlin, America/New_York, UTC)");
  }
  std::string error;
  EXPECT_NE(time_zone_named("UTC", error), nullptr);
}

}  // namespace
}  // namespace sluice::config
