#pragma once

#include <cstdint>
#include <queue>
#include <string>
#include <string_view>
#include <vector>

#include "proxy/pipeline/pipeline.hpp"
#include "proxy/replay/replay_record.hpp"
#include "proxy/replay/replay_summary.hpp"

namespace sluice::replay {

enum class InputFormat { jsonl, combined };

/// Runs recorded requests through the same pipeline as the live proxy, with a simulated clock
/// (SPEC §6): each request is decided at its recorded `t`; a delayed one reserves its permits at
/// once; a concurrency permit is given back `duration` after the request starts, when its
/// response ends, and the charges that wait for the response (SPEC §9) are settled then with
/// the record's `response_cost` and `status`. Streaming: memory holds one line, what is still in
/// flight and the bounded summary.
class Replayer {
 public:
  Replayer(const config::ProxyConfig& config, InputFormat format);

  /// Decides one input line and appends its JSON output line to `out`. A malformed line is
  /// counted in the summary, with its number, and produces no output. Blank lines are skipped.
  void feed(std::string_view line, std::string& out);

  const ReplaySummary& summary() const noexcept { return summary_; }
  std::uint64_t requests() const noexcept { return index_; }
  std::uint64_t out_of_order() const noexcept { return out_of_order_; }

 private:
  struct PendingRelease {
    limiter::TimePoint at;
    pipeline::Permit permit;
    bool operator>(const PendingRelease& other) const noexcept { return at > other.at; }
  };

  /// Charges waiting for a response that ends at `at`, with what it said.
  struct PendingSettlement {
    limiter::TimePoint at;
    const config::Route* route;
    std::array<pipeline::LaterCharge, limiter::kMaxChargesSettledLater> later;
    std::size_t count;
    pipeline::ResponseSaid said;
    bool operator>(const PendingSettlement& other) const noexcept { return at > other.at; }
  };

  void release_due(limiter::TimePoint now);
  /// When the record's response ends: `duration` after it was decided and held.
  limiter::TimePoint response_end(const pipeline::Decision& decision, limiter::TimePoint now) const;
  void hold_permits(const pipeline::Decision& decision, limiter::TimePoint now);
  void hold_later_charges(const pipeline::Decision& decision, limiter::TimePoint now);
  /// "per-ip 203.0.113.9"; secret-bearing keys as a hash ("api-key #3fa9c2e1b0d4").
  std::string key_label(const pipeline::LimiterReport& report, const pipeline::RequestView& request,
                        const pipeline::Decision& decision);
  void write(const pipeline::Decision& decision, std::string& out) const;

  pipeline::Pipeline pipeline_;
  ReplaySummary summary_;
  ReplayRecord record_;
  InputFormat format_;
  std::size_t line_number_ = 0;
  std::uint64_t index_ = 0;
  std::uint64_t out_of_order_ = 0;
  limiter::TimePoint last_{};
  std::priority_queue<PendingRelease, std::vector<PendingRelease>, std::greater<>> releases_;
  std::priority_queue<PendingSettlement, std::vector<PendingSettlement>, std::greater<>>
      settlements_;
  std::string key_text_;
};

}  // namespace sluice::replay
