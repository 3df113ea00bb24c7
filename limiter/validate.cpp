#include "limiter/validate.hpp"

#include <array>
#include <cmath>
#include <sstream>
#include <stdexcept>
#include <utility>

namespace sluice::limiter {
namespace {

[[noreturn]] void refuse(std::string_view parameter, std::string_view requirement,
                         const std::string& got) {
  std::string message(parameter);
  message.append(" must be ").append(requirement).append(", got ").append(got);
  throw std::invalid_argument(message);
}

}  // namespace

void require_at_least(std::string_view parameter, std::uint64_t value, std::uint64_t minimum) {
  if (value < minimum) {
    refuse(parameter, "at least " + std::to_string(minimum), std::to_string(value));
  }
}

void require_at_most(std::string_view parameter, std::uint64_t value, std::uint64_t maximum) {
  if (value > maximum) {
    refuse(parameter, "at most " + std::to_string(maximum), std::to_string(value));
  }
}

void require_positive(std::string_view parameter, Duration value) {
  if (value <= Duration::zero()) {
    refuse(parameter, "positive", format_duration(value));
  }
}

void require_not_negative(std::string_view parameter, Duration value) {
  if (value < Duration::zero()) {
    refuse(parameter, "zero or positive", format_duration(value));
  }
}

void require_number_at_least(std::string_view parameter, double value, double minimum) {
  if (!std::isfinite(value) || value < minimum) {
    refuse(parameter, "at least " + format_number(minimum), format_number(value));
  }
}

std::string format_duration(Duration value) {
  static constexpr std::array<std::pair<std::int64_t, const char*>, 6> kUnits{{
      {86'400'000'000'000, "d"},
      {3'600'000'000'000, "h"},
      {60'000'000'000, "m"},
      {1'000'000'000, "s"},
      {1'000'000, "ms"},
      {1'000, "us"},
  }};
  const std::int64_t ns = value.count();
  for (const auto& [length, suffix] : kUnits) {
    if (ns != 0 && ns % length == 0) {
      return std::to_string(ns / length) + suffix;
    }
  }
  return std::to_string(ns) + "ns";
}

std::string format_number(double value) {
  std::ostringstream out;
  out << value;
  return out.str();
}

}  // namespace sluice::limiter
