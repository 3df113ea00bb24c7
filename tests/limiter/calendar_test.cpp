// Calendar periods (SPEC §8's plan quotas) with exact dates: months of every length, ISO weeks,
// years, a zone ahead of UTC, a zone whose clocks change, and a fixed window that resets on the
// 1st. The zones here are the test's own rules; the time zone database's are tested with the
// configuration (tests/config/time_zones_test.cpp).
#include "limiter/calendar.hpp"

#include <gtest/gtest.h>

#include "limiter/fixed_window.hpp"
#include "tests/support/drive.hpp"

namespace sluice::limiter {
namespace {

using namespace std::chrono;
using namespace std::chrono_literals;

TimePoint utc(year_month_day date, seconds time_of_day = 0s) {
  return TimePoint(duration_cast<Duration>(sys_days(date).time_since_epoch() + time_of_day));
}

/// A zone always `offset` ahead of UTC.
class FixedOffset : public TimeZone {
 public:
  explicit FixedOffset(seconds offset) : offset_(offset) {}
  std::string_view name() const noexcept override { return "fixed"; }
  local_seconds to_local(sys_seconds t) const noexcept override {
    return local_seconds(t.time_since_epoch() + offset_);
  }
  sys_seconds to_utc(local_seconds local) const noexcept override {
    return sys_seconds(local.time_since_epoch() - offset_);
  }

 private:
  seconds offset_;
};

/// UTC+1, and UTC+2 from `change` on: at the change local clocks jump from 02:00 to 03:00, as
/// central Europe's do in spring.
class SpringForward : public TimeZone {
 public:
  explicit SpringForward(sys_seconds change) : change_(change) {}
  std::string_view name() const noexcept override { return "spring"; }
  local_seconds to_local(sys_seconds t) const noexcept override {
    return local_seconds(t.time_since_epoch() + (t < change_ ? 1h : 2h));
  }
  sys_seconds to_utc(local_seconds local) const noexcept override {
    const sys_seconds before(local.time_since_epoch() - 1h);
    if (before < change_) {
      return before;
    }
    const sys_seconds after(local.time_since_epoch() - 2h);
    return after >= change_ ? after : change_;  // skipped local times: the jump itself
  }

 private:
  sys_seconds change_;
};

TEST(CalendarPeriods, MonthsOfEveryLengthStartOnTheFirst) {
  const CalendarPeriods months(Calendar::month, nullptr);
  const std::int64_t november = months.index(utc(2026y / November / 27, 12h));
  EXPECT_EQ(november, 2026 * 12 + 10);
  EXPECT_EQ(months.start(november), utc(2026y / November / 1));
  EXPECT_EQ(months.start(november + 1), utc(2026y / December / 1));
  EXPECT_EQ(months.start(november + 2), utc(2027y / January / 1));
  // February of a leap year: 29 days; the last second of it is still February.
  const std::int64_t february = months.index(utc(2028y / February / 29, 23h + 59min + 59s));
  EXPECT_EQ(months.start(february + 1) - months.start(february), duration_cast<Duration>(29 * 24h));
  EXPECT_EQ(months.index(utc(2028y / March / 1)), february + 1);
  // Before the epoch too.
  EXPECT_EQ(months.start(months.index(utc(1969y / July / 20, 20h))), utc(1969y / July / 1));
}

TEST(CalendarPeriods, WeeksRunMondayToSundayAndYearsFromJanuary) {
  const CalendarPeriods weeks(Calendar::week, nullptr);
  // 2026-11-27 is a Friday; its week began on Monday the 23rd and ends before Monday the 30th.
  const std::int64_t week = weeks.index(utc(2026y / November / 27, 9h));
  EXPECT_EQ(weeks.start(week), utc(2026y / November / 23));
  EXPECT_EQ(weeks.start(week + 1), utc(2026y / November / 30));
  EXPECT_EQ(weeks.index(utc(2026y / November / 29, 23h + 59min)), week);  // Sunday
  EXPECT_EQ(weeks.index(utc(1970y / January / 1)), 0);  // a Thursday: the week of Monday 29 Dec
  EXPECT_EQ(weeks.start(0), utc(1969y / December / 29));
  const CalendarPeriods years(Calendar::year, nullptr);
  EXPECT_EQ(years.index(utc(2026y / December / 31, 23h)), 2026);
  EXPECT_EQ(years.start(2027), utc(2027y / January / 1));
  const CalendarPeriods days_(Calendar::day, nullptr);
  EXPECT_EQ(days_.start(days_.index(utc(2026y / November / 27, 18h))), utc(2026y / November / 27));
}

TEST(CalendarPeriods, ALocalDayStartsAtLocalMidnight) {
  const FixedOffset east(2h);  // as Kyiv in winter
  const CalendarPeriods local_days_(Calendar::day, &east);
  // 23:30 UTC on the 27th is 01:30 on the 28th there: that day began at 22:00 UTC on the 27th.
  const std::int64_t day = local_days_.index(utc(2026y / November / 27, 23h + 30min));
  EXPECT_EQ(local_days_.start(day), utc(2026y / November / 27, 22h));
  EXPECT_EQ(local_days_.start(day + 1), utc(2026y / November / 28, 22h));
  const CalendarPeriods local_months(Calendar::month, &east);
  EXPECT_EQ(local_months.start(local_months.index(utc(2026y / November / 30, 23h))),
            utc(2026y / November / 30, 22h));  // already December there
}

TEST(CalendarPeriods, ADayWithAClockChangeIsShorter) {
  // Clocks go from 02:00 to 03:00 local (01:00 UTC) on 2027-03-28: that day has 23 hours.
  const SpringForward zone(sys_days(2027y / March / 28) + 1h);
  const CalendarPeriods local_days_(Calendar::day, &zone);
  const std::int64_t day = local_days_.index(utc(2027y / March / 28, 12h));
  EXPECT_EQ(local_days_.start(day), utc(2027y / March / 27, 23h));
  EXPECT_EQ(local_days_.start(day + 1), utc(2027y / March / 28, 22h));
}

TEST(CalendarPeriods, AMonthlyQuotaResetsOnTheFirst) {
  const FixedWindow monthly(
      {.limit = 3, .window = {}, .calendar = Calendar::month, .zone = nullptr});
  FixedWindow::State state;
  const TimePoint last_day = utc(2026y / November / 30, 18h);
  EXPECT_EQ(test::admit_all(monthly, state, last_day), 3);
  const Verdict refused = test::request(monthly, state, last_day);
  EXPECT_FALSE(refused.admitted);
  EXPECT_EQ(refused.retry_after, 6h);  // to midnight, December 1st
  EXPECT_EQ(monthly.status(state, last_day).reset, 6h);
  EXPECT_EQ(monthly.status(state, last_day).remaining, 0U);
  EXPECT_TRUE(test::request(monthly, state, utc(2026y / December / 1)).admitted);
  EXPECT_EQ(monthly.status(state, utc(2026y / December / 1)).remaining, 2U);
  EXPECT_EQ(monthly.status(state, utc(2026y / December / 1)).reset,
            duration_cast<Duration>(31 * 24h));
}

}  // namespace
}  // namespace sluice::limiter
