#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "limiter/time.hpp"

namespace sluice::limiter {

/// Parameter checks for limiter constructors (control plane: they throw std::invalid_argument
/// with a message that names the parameter and the value, e.g. "limit must be at least 1, got 0").
void require_at_least(std::string_view parameter, std::uint64_t value, std::uint64_t minimum);
void require_at_most(std::string_view parameter, std::uint64_t value, std::uint64_t maximum);
void require_positive(std::string_view parameter, Duration value);
void require_not_negative(std::string_view parameter, Duration value);
void require_number_at_least(std::string_view parameter, double value, double minimum);

/// "250ms", "10s", "1m", "1500ns": the largest unit that divides the duration exactly.
std::string format_duration(Duration value);
/// Shortest decimal form of a number ("0.5", "20", "1e+12").
std::string format_number(double value);

}  // namespace sluice::limiter
