#pragma once

#include <array>
#include <cstdint>
#include <deque>
#include <mutex>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "proxy/telemetry/metrics.hpp"

namespace sluice::telemetry {

/// Requests per second by route and decision over the last kSeconds seconds, for the operators'
/// page (SPEC §10). A timer samples the routes' counters (Metrics::route_totals) once a second:
/// the request path does nothing more, and memory is bounded by the routes ever named (as the
/// metrics' series are), kSeconds samples each.
class TrafficHistory {
 public:
  static constexpr std::size_t kSeconds = 600;
  using Counts = std::array<std::uint64_t, kMetricDecisions>;

  /// Takes the routes' cumulative counts now, `seconds` (≥ 1) after the last sample: what they
  /// grew by is spread over those seconds. The first sample of a route only sets its baseline.
  void sample(std::span<const std::pair<std::string, Counts>> totals, std::size_t seconds = 1);

  /// One route's requests per second, by decision, oldest first.
  struct Series {
    std::string route;
    std::array<std::vector<std::uint32_t>, kMetricDecisions> decisions;
  };
  /// What was sampled after sample number `since` (at most kSeconds), and the number of the
  /// newest: pass it back as `since` to get only what came next.
  struct Window {
    std::uint64_t newest = 0;
    std::size_t seconds = 0;  ///< Samples in each series.
    std::vector<Series> routes;
  };
  Window since(std::uint64_t since) const;

 private:
  struct Route {
    std::string name;
    Counts last{};
    std::vector<std::array<std::uint32_t, kMetricDecisions>> ring;  ///< kSeconds slots.
  };
  mutable std::mutex mutex_;  ///< The sampler's timer and the admin port; never a request.
  std::deque<Route> routes_;
  std::uint64_t samples_ = 0;  ///< Seconds sampled so far; slot `n % kSeconds` holds second n.
};

}  // namespace sluice::telemetry
