#pragma once

#include <cstdint>
#include <iosfwd>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "proxy/pipeline/pipeline.hpp"

namespace sluice::replay {

/// Counts of one route (or of the denied and unrouted requests) in one span of time.
struct Counts {
  std::uint64_t allowed = 0;
  std::uint64_t delayed = 0;
  std::uint64_t limited = 0;
  std::uint64_t denied = 0;
  std::uint64_t no_route = 0;
  std::uint64_t unauthorized = 0;  ///< A route's token refused (SPEC §8).
  std::uint64_t shadow_limited = 0;

  void add(pipeline::Outcome outcome, bool shadow) noexcept;
  std::uint64_t total() const noexcept {
    return allowed + delayed + limited + denied + no_route + unauthorized;
  }
  void merge(const Counts& other) noexcept;
};

/// What a replay found, in memory that does not grow with the log: per-route totals, per-route
/// time series of at most kMaxBuckets buckets (bucket width doubles as the log grows), and the
/// most limited keys by the Space-Saving algorithm (kTopCapacity counters).
class ReplaySummary {
 public:
  static constexpr std::size_t kMaxBuckets = 480;
  static constexpr std::size_t kTopCapacity = 1024;

  explicit ReplaySummary(const config::ProxyConfig& config);

  void record(double t, const pipeline::Decision& decision, bool shadow_limited);
  /// Counts one limited request against `key` (a printable label).
  void limited_key(std::string_view key);
  void malformed(std::size_t line_number, std::string_view problem);

  struct Row {
    std::string name;
    Counts totals;
    std::vector<Counts> buckets;
  };
  const std::vector<Row>& rows() const noexcept { return rows_; }
  double origin() const noexcept { return origin_; }
  double bucket_seconds() const noexcept { return bucket_seconds_; }
  std::uint64_t malformed_lines() const noexcept { return malformed_; }
  /// The most limited keys, most first (count, label).
  std::vector<std::pair<std::uint64_t, std::string>> top_keys(std::size_t n) const;

  /// The summary for a terminal: a table per route, malformed lines, top limited keys.
  void print(std::ostream& out) const;

 private:
  std::size_t row_of(const pipeline::Decision& decision) const noexcept;

  const config::ProxyConfig& config_;
  std::vector<Row> rows_;  ///< The config's routes, then "(no route)", then "(denied)".
  double origin_ = -1;
  double bucket_seconds_ = 1;
  std::uint64_t malformed_ = 0;
  std::vector<std::string> first_problems_;
  struct TopEntry {
    std::uint64_t count = 0;
  };
  std::unordered_map<std::string, TopEntry> top_;
};

}  // namespace sluice::replay
