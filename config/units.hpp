#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "limiter/rate.hpp"
#include "limiter/time.hpp"

namespace sluice::config {

/// `250ms`, `10s`, `1m`, `1h`, `1d`, decimals allowed (`1.5s`), and a bare `0`. Exact in
/// nanoseconds; nullopt for anything else, including a fraction finer than a nanosecond.
std::optional<limiter::Duration> parse_duration(std::string_view text);

/// `N/s`, `N/m`, `N/h`, `N/d` or `N/<duration>` (`5/200ms`); N may have decimals.
std::optional<limiter::Rate> parse_rate(std::string_view text);

/// "10/s", "5/200ms": the shortest form that parse_rate reads back.
std::string format_rate(const limiter::Rate& rate);

inline constexpr std::string_view kDurationHelp = "use a number and ms, s, m, h or d (250ms, 10s)";
inline constexpr std::string_view kRateHelp =
    "use N/s, N/m, N/h, N/d or N/<duration> (10/s, 5/200ms)";

}  // namespace sluice::config
