#include "proxy/telemetry/traffic_history.hpp"

#include <algorithm>
#include <limits>

namespace sluice::telemetry {

void TrafficHistory::sample(std::span<const std::pair<std::string, Counts>> totals,
                            std::size_t seconds) {
  const std::lock_guard lock(mutex_);
  seconds = std::clamp<std::size_t>(seconds, 1, kSeconds);
  for (auto& route : routes_) {  // every route's slots for these seconds start empty
    for (std::size_t s = 1; s <= seconds; ++s) {
      route.ring[(samples_ + s) % kSeconds] = {};
    }
  }
  for (const auto& entry : totals) {
    const auto& [name, counts] = entry;
    auto found = std::find_if(routes_.begin(), routes_.end(),
                              [&entry](const Route& route) { return route.name == entry.first; });
    if (found == routes_.end()) {
      routes_.push_back(Route{.name = name, .last = counts, .ring = {}});
      routes_.back().ring.resize(kSeconds);
      continue;
    }
    for (std::size_t d = 0; d < kMetricDecisions; ++d) {
      const std::uint64_t grown = counts[d] > found->last[d] ? counts[d] - found->last[d] : 0;
      for (std::size_t s = 1; s <= seconds; ++s) {
        // An even share, the remainder on the earliest seconds: the sum is what grew.
        const std::uint64_t share = grown / seconds + (s <= grown % seconds ? 1 : 0);
        found->ring[(samples_ + s) % kSeconds][d] = static_cast<std::uint32_t>(
            std::min<std::uint64_t>(share, std::numeric_limits<std::uint32_t>::max()));
      }
    }
    found->last = counts;
  }
  samples_ += seconds;
}

TrafficHistory::Window TrafficHistory::since(std::uint64_t since) const {
  const std::lock_guard lock(mutex_);
  Window window{.newest = samples_,
                .seconds = static_cast<std::size_t>(
                    std::min<std::uint64_t>(samples_ - std::min(since, samples_), kSeconds)),
                .routes = {}};
  for (const Route& route : routes_) {
    Series series{.route = route.name, .decisions = {}};
    for (std::size_t d = 0; d < kMetricDecisions; ++d) {
      series.decisions[d].reserve(window.seconds);
      for (std::uint64_t n = samples_ - window.seconds + 1; n <= samples_; ++n) {
        series.decisions[d].push_back(route.ring[n % kSeconds][d]);
      }
    }
    window.routes.push_back(std::move(series));
  }
  return window;
}

}  // namespace sluice::telemetry
