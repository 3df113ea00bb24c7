#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "config/proxy_config.hpp"
#include "limiter/clock.hpp"
#include "proxy/telemetry/metrics.hpp"

namespace spdlog {
class logger;
namespace details {
class thread_pool;
}
}  // namespace spdlog

namespace sluice::telemetry {

/// What one line of the access log says about a request.
struct AccessRecord {
  std::string_view client;  ///< The client address, as the pipeline resolved it.
  std::string_view method;
  std::string_view target;
  /// Query parameters whose values the line shows as `***` (those limiters key on).
  std::span<const std::string> secret_query{};
  std::string_view route;  ///< "" when none matched.
  MetricDecision decision = MetricDecision::allowed;
  unsigned status = 0;           ///< 0: the client went away before an answer.
  std::uint64_t key_hash = 0;    ///< The first limiter's key, hashed: never the key itself.
  limiter::Duration upstream{};  ///< Until the upstream's response header; 0 if not forwarded.
  limiter::Duration total{};
  /// What the response was charged (SPEC §9); nullopt when no charge waited for it.
  std::optional<std::uint64_t> cost{};
  /// Why what the response said of its cost could not be used ("negative"), if so.
  std::string_view cost_problem{};
};

/// The access log: one line per request on standard output, text or JSON. Lines go through a
/// bounded queue to a thread of their own, so a slow terminal or pipe never blocks an event
/// loop; when the queue is full the oldest line is dropped, and counted (dropped()).
class AccessLog {
 public:
  AccessLog();
  ~AccessLog();
  AccessLog(const AccessLog&) = delete;
  AccessLog& operator=(const AccessLog&) = delete;
  AccessLog(AccessLog&&) = delete;
  AccessLog& operator=(AccessLog&&) = delete;

  void write(config::LogFormat format, const AccessRecord& record);
  /// Lines dropped so far because the queue was full (`sluice_access_log_dropped_total`).
  std::uint64_t dropped() const;

  /// The line `write` would log, without the timestamp (for tests).
  static std::string format(config::LogFormat format, const AccessRecord& record);

 private:
  std::shared_ptr<spdlog::details::thread_pool> pool_;  ///< The logger only keeps a weak_ptr.
  std::shared_ptr<spdlog::logger> logger_;
};

}  // namespace sluice::telemetry
