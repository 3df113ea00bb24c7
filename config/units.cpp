#include "config/units.hpp"

#include <array>
#include <charconv>
#include <cstdint>
#include <limits>
#include <utility>

#include "limiter/validate.hpp"

namespace sluice::config {
namespace {

constexpr std::array<std::pair<std::string_view, std::int64_t>, 5> kUnits{{
    {"ms", 1'000'000},
    {"s", 1'000'000'000},
    {"m", 60'000'000'000},
    {"h", 3'600'000'000'000},
    {"d", 86'400'000'000'000},
}};

std::optional<std::int64_t> unit_nanoseconds(std::string_view unit) {
  for (const auto& [name, ns] : kUnits) {
    if (name == unit) {
      return ns;
    }
  }
  return std::nullopt;
}

bool all_digits(std::string_view text) {
  for (const char c : text) {
    if (c < '0' || c > '9') {
      return false;
    }
  }
  return !text.empty();
}

/// `whole.fraction` times `scale`, exactly; nullopt on overflow or a remainder.
std::optional<std::int64_t> scaled(std::string_view number, std::int64_t scale) {
  const std::size_t dot = number.find('.');
  const std::string_view whole = number.substr(0, dot);
  const std::string_view fraction = dot == std::string_view::npos ? "" : number.substr(dot + 1);
  if (!all_digits(whole) || (dot != std::string_view::npos && !all_digits(fraction))) {
    return std::nullopt;
  }
  std::int64_t value = 0;
  if (std::from_chars(whole.data(), whole.data() + whole.size(), value).ec != std::errc{} ||
      value > std::numeric_limits<std::int64_t>::max() / scale) {
    return std::nullopt;
  }
  value *= scale;
  std::int64_t place = scale;
  for (const char digit : fraction) {
    if (place % 10 != 0) {
      return std::nullopt;  // finer than the unit's resolution (a nanosecond)
    }
    place /= 10;
    value += (digit - '0') * place;
  }
  return value;
}

}  // namespace

std::optional<limiter::Duration> parse_duration(std::string_view text) {
  if (text == "0") {
    return limiter::Duration::zero();
  }
  std::size_t unit_at = text.size();
  while (unit_at > 0 && text[unit_at - 1] >= 'a' && text[unit_at - 1] <= 'z') {
    --unit_at;
  }
  const std::optional<std::int64_t> unit = unit_nanoseconds(text.substr(unit_at));
  if (!unit) {
    return std::nullopt;
  }
  const std::optional<std::int64_t> ns = scaled(text.substr(0, unit_at), *unit);
  return ns ? std::optional(limiter::Duration(*ns)) : std::nullopt;
}

std::optional<limiter::Rate> parse_rate(std::string_view text) {
  const std::size_t slash = text.find('/');
  if (slash == std::string_view::npos) {
    return std::nullopt;
  }
  const std::string_view count = text.substr(0, slash);
  const std::string_view per = text.substr(slash + 1);
  // Permits may be fractional (0.5/s); read them as a duration-like decimal, in millionths.
  const std::optional<std::int64_t> micro_permits = scaled(count, 1'000'000);
  if (!micro_permits || *micro_permits == 0) {
    return std::nullopt;
  }
  std::optional<limiter::Duration> period;
  if (const std::optional<std::int64_t> unit = unit_nanoseconds(per)) {
    period = limiter::Duration(*unit);
  } else {
    period = parse_duration(per);
  }
  if (!period || *period <= limiter::Duration::zero()) {
    return std::nullopt;
  }
  return limiter::Rate{.permits = static_cast<double>(*micro_permits) / 1e6, .period = *period};
}

std::string format_rate(const limiter::Rate& rate) {
  std::string period = limiter::format_duration(rate.period);
  if (period.size() > 1 && period[0] == '1' && (period[1] < '0' || period[1] > '9')) {
    period.erase(0, 1);  // "1s" reads better as "s"
  }
  return limiter::format_number(rate.permits) + "/" + period;
}

}  // namespace sluice::config
