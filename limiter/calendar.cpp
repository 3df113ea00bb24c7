#include "limiter/calendar.hpp"

#include <algorithm>

namespace sluice::limiter {
namespace {

using std::chrono::days;
using std::chrono::floor;
using std::chrono::local_days;
using std::chrono::local_seconds;
using std::chrono::sys_seconds;

/// 1970-01-01 was a Thursday: days since then, plus 3, count from a Monday.
constexpr std::int64_t kThursdayToMonday = 3;

std::int64_t floor_div(std::int64_t a, std::int64_t b) noexcept {
  const std::int64_t quotient = a / b;
  return (a % b != 0 && (a < 0) != (b < 0)) ? quotient - 1 : quotient;
}

// Years beyond ±30,000 are out of the calendar types' range; no limiter time gets there (the
// engine's time is nanoseconds since the epoch, ±292 years), but an index may be asked for.
constexpr std::int64_t kYearLimit = 30'000;

}  // namespace

std::string_view name_of(Calendar calendar) noexcept {
  switch (calendar) {
    case Calendar::none:
      return "none";
    case Calendar::day:
      return "day";
    case Calendar::week:
      return "week";
    case Calendar::month:
      return "month";
    case Calendar::year:
      return "year";
  }
  return "none";
}

std::int64_t CalendarPeriods::index(TimePoint t) const noexcept {
  const sys_seconds utc = floor<std::chrono::seconds>(t);
  const local_seconds local =
      zone_ != nullptr ? zone_->to_local(utc) : local_seconds(utc.time_since_epoch());
  const local_days day = floor<days>(local);
  const std::int64_t day_number = day.time_since_epoch().count();
  switch (unit_) {
    case Calendar::none:
    case Calendar::day:
      return day_number;
    case Calendar::week:
      return floor_div(day_number + kThursdayToMonday, 7);
    case Calendar::month: {
      const std::chrono::year_month_day date(day);
      return static_cast<std::int64_t>(static_cast<int>(date.year())) * 12 +
             static_cast<std::int64_t>(static_cast<unsigned>(date.month())) - 1;
    }
    case Calendar::year:
      return static_cast<int>(std::chrono::year_month_day(day).year());
  }
  return day_number;
}

TimePoint CalendarPeriods::start(std::int64_t index) const noexcept {
  local_days first;
  switch (unit_) {
    case Calendar::none:
    case Calendar::day:
      first = local_days(days(index));
      break;
    case Calendar::week:
      first = local_days(days(index * 7 - kThursdayToMonday));
      break;
    case Calendar::month: {
      const std::int64_t year = std::clamp(floor_div(index, 12), -kYearLimit, kYearLimit);
      const auto month = static_cast<unsigned>(index - floor_div(index, 12) * 12 + 1);
      first = local_days(std::chrono::year(static_cast<int>(year)) / std::chrono::month(month) /
                         std::chrono::day(1));
      break;
    }
    case Calendar::year:
      first = local_days(
          std::chrono::year(static_cast<int>(std::clamp(index, -kYearLimit, kYearLimit))) /
          std::chrono::January / std::chrono::day(1));
      break;
  }
  const local_seconds local(first.time_since_epoch());
  const sys_seconds utc =
      zone_ != nullptr ? zone_->to_utc(local) : sys_seconds(local.time_since_epoch());
  // Limiter time is nanoseconds since the epoch: a start beyond it saturates.
  constexpr auto kLimit = std::chrono::duration_cast<std::chrono::seconds>(Duration::max());
  if (utc.time_since_epoch() >= kLimit) {
    return kNever;
  }
  if (utc.time_since_epoch() <= -kLimit) {
    return kAlways;
  }
  return TimePoint(std::chrono::duration_cast<Duration>(utc.time_since_epoch()));
}

}  // namespace sluice::limiter
