#include "proxy/replay/replay_summary.hpp"

#include <algorithm>
#include <cmath>
#include <ostream>

namespace sluice::replay {

void Counts::add(pipeline::Outcome outcome, bool shadow) noexcept {
  switch (outcome) {
    case pipeline::Outcome::allowed:
      ++allowed;
      break;
    case pipeline::Outcome::delayed:
      ++delayed;
      break;
    case pipeline::Outcome::limited:
      ++limited;
      break;
    case pipeline::Outcome::denied:
      ++denied;
      break;
    case pipeline::Outcome::no_route:
      ++no_route;
      break;
    case pipeline::Outcome::unauthorized:
      ++unauthorized;
      break;
  }
  shadow_limited += shadow ? 1 : 0;
}

void Counts::merge(const Counts& other) noexcept {
  allowed += other.allowed;
  delayed += other.delayed;
  limited += other.limited;
  denied += other.denied;
  no_route += other.no_route;
  unauthorized += other.unauthorized;
  shadow_limited += other.shadow_limited;
}

ReplaySummary::ReplaySummary(const config::ProxyConfig& config) : config_(config) {
  for (const config::Route& route : config.routes) {
    rows_.push_back({route.name, {}, {}});
  }
  rows_.push_back({"(no route)", {}, {}});
  rows_.push_back({"(denied)", {}, {}});
}

std::size_t ReplaySummary::row_of(const pipeline::Decision& decision) const noexcept {
  if (decision.route != nullptr) {
    return static_cast<std::size_t>(decision.route - config_.routes.data());
  }
  return decision.outcome == pipeline::Outcome::no_route ? rows_.size() - 2 : rows_.size() - 1;
}

void ReplaySummary::record(double t, const pipeline::Decision& decision, bool shadow_limited) {
  Row& row = rows_[row_of(decision)];
  row.totals.add(decision.outcome, shadow_limited);
  if (origin_ < 0) {
    origin_ = std::floor(t);
  }
  auto bucket = static_cast<std::size_t>(std::max(0.0, t - origin_) / bucket_seconds_);
  while (bucket >= kMaxBuckets) {
    // The log outgrew the buckets: halve their number by doubling their width.
    for (Row& each : rows_) {
      for (std::size_t i = 0; i < each.buckets.size(); ++i) {
        if (i % 2 == 0) {
          each.buckets[i / 2] = each.buckets[i];
        } else {
          each.buckets[i / 2].merge(each.buckets[i]);
        }
      }
      each.buckets.resize((each.buckets.size() + 1) / 2);
    }
    bucket_seconds_ *= 2;
    bucket = static_cast<std::size_t>(std::max(0.0, t - origin_) / bucket_seconds_);
  }
  if (row.buckets.size() <= bucket) {
    row.buckets.resize(bucket + 1);
  }
  row.buckets[bucket].add(decision.outcome, shadow_limited);
}

void ReplaySummary::limited_key(std::string_view key) {
  // Space-Saving: a new key takes the smallest counter's place and count, plus one, so the
  // heavy hitters are kept with bounded memory and bounded over-count.
  const std::string label(key);
  if (auto found = top_.find(label); found != top_.end()) {
    ++found->second.count;
    return;
  }
  if (top_.size() < kTopCapacity) {
    top_.emplace(label, TopEntry{1});
    return;
  }
  auto smallest = std::min_element(top_.begin(), top_.end(), [](const auto& a, const auto& b) {
    return a.second.count < b.second.count;
  });
  const std::uint64_t count = smallest->second.count + 1;
  top_.erase(smallest);
  top_.emplace(label, TopEntry{count});
}

void ReplaySummary::malformed(std::size_t line_number, std::string_view problem) {
  ++malformed_;
  if (first_problems_.size() < 10) {
    first_problems_.push_back("line " + std::to_string(line_number) + ": " + std::string(problem));
  }
}

std::vector<std::pair<std::uint64_t, std::string>> ReplaySummary::top_keys(std::size_t n) const {
  std::vector<std::pair<std::uint64_t, std::string>> keys;
  keys.reserve(top_.size());
  for (const auto& [label, entry] : top_) {
    keys.emplace_back(entry.count, label);
  }
  std::sort(keys.begin(), keys.end(), [](const auto& a, const auto& b) {
    return a.first != b.first ? a.first > b.first : a.second < b.second;
  });
  keys.resize(std::min(n, keys.size()));
  return keys;
}

void ReplaySummary::print(std::ostream& out) const {
  std::size_t width = 5;
  for (const Row& row : rows_) {
    width = std::max(width, row.name.size());
  }
  const auto cell = [](std::uint64_t value) {
    std::string text = std::to_string(value);
    return std::string(text.size() < 9 ? 9 - text.size() : 0, ' ') + text;
  };
  // The unauthorized column only where some route verifies tokens.
  const bool verifies =
      std::any_of(config_.routes.begin(), config_.routes.end(),
                  [](const config::Route& route) { return route.auth.has_value(); });
  out << "route" << std::string(width - 5, ' ')
      << "   requests    allowed    delayed    limited     denied   no route     shadow"
      << (verifies ? "    unauth.\n" : "\n");
  for (const Row& row : rows_) {
    if (row.totals.total() == 0) {
      continue;
    }
    const Counts& c = row.totals;
    out << row.name << std::string(width - row.name.size(), ' ') << "  " << cell(c.total()) << "  "
        << cell(c.allowed) << "  " << cell(c.delayed) << "  " << cell(c.limited) << "  "
        << cell(c.denied) << "  " << cell(c.no_route) << "  " << cell(c.shadow_limited);
    if (verifies) {
      out << "  " << cell(c.unauthorized);
    }
    out << '\n';
  }
  if (malformed_ > 0) {
    out << "\nmalformed lines: " << malformed_ << " (skipped)\n";
    for (const std::string& problem : first_problems_) {
      out << "  " << problem << '\n';
    }
  }
  const auto top = top_keys(10);
  if (!top.empty()) {
    out << "\ntop limited keys:\n";
    for (const auto& [count, label] : top) {
      out << cell(count) << "  " << label << '\n';
    }
  }
}

}  // namespace sluice::replay
