// nginx / Apache "combined" access logs:
//   $remote_addr - $remote_user [$time_local] "$request" $status $bytes "$http_referer"
//   "$http_user_agent"
#include <array>
#include <charconv>
#include <chrono>

#include "proxy/replay/replay_record.hpp"

namespace sluice::replay {
namespace {

std::optional<int> number(std::string_view digits) {
  if (digits.find_first_not_of("0123456789") != std::string_view::npos) {
    return std::nullopt;  // from_chars would take a sign
  }
  int value = 0;
  const auto [end, error] = std::from_chars(digits.data(), digits.data() + digits.size(), value);
  if (error != std::errc{} || end != digits.data() + digits.size()) {
    return std::nullopt;
  }
  return value;
}

/// "10/Oct/2024:13:55:36 +0200" → seconds since the Unix epoch.
std::optional<double> parse_time_local(std::string_view text) {
  static constexpr std::array<std::string_view, 12> kMonths{
      "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};
  // dd/Mon/yyyy:hh:mm:ss +zzzz
  if (text.size() != 26 || text[2] != '/' || text[6] != '/' || text[11] != ':' || text[14] != ':' ||
      text[17] != ':' || text[20] != ' ') {
    return std::nullopt;
  }
  const auto day = number(text.substr(0, 2));
  const auto year = number(text.substr(7, 4));
  const auto hour = number(text.substr(12, 2));
  const auto minute = number(text.substr(15, 2));
  const auto second = number(text.substr(18, 2));
  const auto zone = number(text.substr(22, 4));
  unsigned month = 0;
  while (month < 12 && kMonths[month] != text.substr(3, 3)) {
    ++month;
  }
  if (!day || !year || !hour || !minute || !second || !zone || month == 12 ||
      (text[21] != '+' && text[21] != '-')) {
    return std::nullopt;
  }
  const std::chrono::year_month_day date{std::chrono::year(*year), std::chrono::month(month + 1),
                                         std::chrono::day(static_cast<unsigned>(*day))};
  if (!date.ok() || *hour > 23 || *minute > 59 || *second > 60) {
    return std::nullopt;
  }
  const auto days = std::chrono::sys_days(date).time_since_epoch().count();
  const int offset = (*zone / 100 * 60 + *zone % 100) * 60 * (text[21] == '-' ? -1 : 1);
  return static_cast<double>(days) * 86400.0 + *hour * 3600 + *minute * 60 + *second - offset;
}

/// The text between the quote at `at` and the next unescaped quote; advances `at` past it.
std::optional<std::string_view> quoted(std::string_view line, std::size_t& at) {
  if (at >= line.size() || line[at] != '"') {
    return std::nullopt;
  }
  std::size_t end = at + 1;
  while (end < line.size() && line[end] != '"') {
    end += line[end] == '\\' ? 2U : 1U;
  }
  if (end >= line.size()) {
    return std::nullopt;
  }
  const std::string_view text = line.substr(at + 1, end - at - 1);
  at = end + 1;
  return text;
}

}  // namespace

std::optional<std::string> parse_combined_line(std::string_view line, ReplayRecord& record) {
  record.reset(line.size());
  const std::size_t space = line.find(' ');
  const std::size_t open = line.find('[');
  const std::size_t close = line.find(']', open);
  if (space == std::string_view::npos || open == std::string_view::npos ||
      close == std::string_view::npos) {
    return "not a combined log line (address - user [time] \"request\" status bytes ...)";
  }
  record.ip = line.substr(0, space);
  const std::optional<double> t = parse_time_local(line.substr(open + 1, close - open - 1));
  if (!t) {
    return "the time is not [dd/Mon/yyyy:hh:mm:ss +zzzz]";
  }
  if (*t < 0 || *t > kMaxSeconds) {
    return "the time is not between 1970 and 2262 (the limiter clock)";
  }
  record.t = *t;
  std::size_t at = close + 2;
  const std::optional<std::string_view> request = quoted(line, at);
  if (!request) {
    return "the request is not quoted";
  }
  const std::size_t first = request->find(' ');
  const std::size_t second = request->rfind(' ');
  if (first == std::string_view::npos || second == first) {
    return "the request is not \"METHOD TARGET PROTOCOL\"";
  }
  record.method = request->substr(0, first);
  record.path = request->substr(first + 1, second - first - 1);
  // Status and bytes (what the response said, for charges settled after it), then the quoted
  // referer and user agent (kept as headers for keys).
  for (int field = 0; field < 2 && at < line.size(); ++field) {
    const std::size_t begin = at + 1;
    at = line.find(' ', begin);
    const std::string_view text =
        line.substr(begin, at == std::string_view::npos ? std::string_view::npos : at - begin);
    std::uint64_t number = 0;
    const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), number);
    if (error != std::errc{} || end != text.data() + text.size()) {
      continue;  // "-" (no body), or not a number: left as it was
    }
    if (field == 0 && number >= 100 && number <= 599) {
      record.status = static_cast<unsigned>(number);
    } else if (field == 1) {
      record.response_bytes = number;
    }
  }
  if (at != std::string_view::npos && ++at < line.size()) {
    if (const auto referer = quoted(line, at); referer && *referer != "-") {
      record.headers[record.header_count++] = {"Referer", *referer};
    }
    ++at;
    if (const auto agent = quoted(line, at); agent && *agent != "-") {
      record.headers[record.header_count++] = {"User-Agent", *agent};
    }
  }
  return std::nullopt;
}

}  // namespace sluice::replay
