#pragma once

#include <array>
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

#include "limiter/verdict.hpp"
#include "proxy/pipeline/request_view.hpp"

namespace sluice::replay {

/// The latest time, and the longest duration, a record may give, in seconds: the limiter clock
/// (nanoseconds since the epoch in 64 bits) ends on 2262-04-11.
inline constexpr double kMaxSeconds = 9'223'372'036;

/// One recorded request (SPEC §6). Strings are views into the input line or into `scratch`
/// (unescaped JSON text); both outlive the record's use. Reused from line to line.
struct ReplayRecord {
  static constexpr std::size_t kMaxHeaders = 64;

  double t = 0;  ///< Seconds since the Unix epoch.
  std::string_view ip = "0.0.0.0";
  std::string_view method = "GET";
  std::string_view path = "/";
  std::string_view host;
  std::array<pipeline::Header, kMaxHeaders> headers{};
  std::size_t header_count = 0;
  std::optional<limiter::Permits> cost;
  double duration = 0;  ///< Seconds in flight, for concurrency limiters.
  /// What the response said (SPEC §9), for the charges settled after it: its cost, its status,
  /// and (a combined log's) its body's bytes.
  std::optional<limiter::Permits> response_cost;
  unsigned status = 200;
  std::optional<std::uint64_t> response_bytes;
  std::string scratch;  ///< Holds unescaped strings; capacity is kept between lines.

  void reset(std::size_t line_size) {
    t = 0;
    ip = "0.0.0.0";
    method = "GET";
    path = "/";
    host = {};
    header_count = 0;
    cost.reset();
    duration = 0;
    response_cost.reset();
    status = 200;
    response_bytes.reset();
    scratch.clear();
    scratch.reserve(line_size);  // views into it must not move: it never outgrows the line
  }
};

/// Parses a JSON line {"t": 12.5, "ip": ..., "headers": {...}, "cost": 1, "duration": 0.2,
/// "response_cost": 1500, "status": 200}.
/// Returns an error message (nullopt on success). Unknown fields are ignored.
std::optional<std::string> parse_json_line(std::string_view line, ReplayRecord& record);

/// Parses an nginx/Apache combined log line:
/// 203.0.113.9 - - [10/Oct/2024:13:55:36 +0000] "GET /api/x HTTP/1.1" 200 512 "-" "curl/8"
std::optional<std::string> parse_combined_line(std::string_view line, ReplayRecord& record);

}  // namespace sluice::replay
