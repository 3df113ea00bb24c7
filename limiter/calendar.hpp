#pragma once

#include <chrono>
#include <cstdint>
#include <string_view>

#include "limiter/time.hpp"

namespace sluice::limiter {

/// Windows that start on calendar boundaries (SPEC §8's plan quotas: "10,000 a month" resets on
/// the 1st). `none`: windows of a fixed length, aligned to the epoch.
enum class Calendar : std::uint8_t { none, day, week, month, year };
std::string_view name_of(Calendar calendar) noexcept;

/// A time zone's rule for turning local time into UTC, given by the layer that reads the time
/// zone database (the engine knows only the standard library). Its instances live as long as
/// the process, one per zone, so limiters compare them by address.
class TimeZone {
 public:
  virtual ~TimeZone() = default;
  /// The zone's name ("Europe/Berlin").
  virtual std::string_view name() const noexcept = 0;
  /// The local time at `t`.
  virtual std::chrono::local_seconds to_local(std::chrono::sys_seconds t) const noexcept = 0;
  /// The first instant whose local time is `local` or later: a local time skipped by a clock
  /// change is the instant the clocks jumped; one repeated, its first occurrence.
  virtual std::chrono::sys_seconds to_utc(std::chrono::local_seconds local) const noexcept = 0;
};

/// Calendar periods in a time zone (UTC without one), numbered: days since 1970-01-01, weeks
/// (Monday to Sunday, ISO 8601) since the one holding it, months since year 0's January, years.
/// The same interface as Periods, so a fixed window counts in either.
class CalendarPeriods {
 public:
  CalendarPeriods(Calendar unit, const TimeZone* zone) noexcept : unit_(unit), zone_(zone) {}

  std::int64_t index(TimePoint t) const noexcept;
  TimePoint start(std::int64_t index) const noexcept;

 private:
  Calendar unit_;
  const TimeZone* zone_;  ///< Null: UTC.
};

}  // namespace sluice::limiter
