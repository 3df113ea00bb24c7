#pragma once

#include <string>
#include <string_view>

#include "limiter/calendar.hpp"

namespace sluice::config {

/// The IANA time zone `name` ("Europe/Berlin", "UTC") from the system's time zone database
/// (/usr/share/zoneinfo, read by the date library's tz): one instance per zone for the
/// process's life, so limiters compare zones by address. Null and `error` when there is no such
/// zone.
const limiter::TimeZone* time_zone_named(std::string_view name, std::string& error);

}  // namespace sluice::config
