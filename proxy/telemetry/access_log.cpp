#include "proxy/telemetry/access_log.hpp"

#include <fmt/chrono.h>
#include <fmt/format.h>
#include <spdlog/async.h>
#include <spdlog/async_logger.h>
#include <spdlog/sinks/stdout_sinks.h>

#include <array>
#include <iterator>

#include "proxy/telemetry/json_escape.hpp"

namespace sluice::telemetry {
namespace {

constexpr std::array<std::string_view, kMetricDecisions> kDecisionNames{
    "allowed", "delayed", "limited", "denied", "shadow_limited", "no_route"};
constexpr std::size_t kQueuedLines = 8192;

double milliseconds(limiter::Duration duration) {
  return std::chrono::duration<double, std::milli>(duration).count();
}

void format_into(fmt::memory_buffer& out, config::LogFormat format, const AccessRecord& r) {
  const std::string_view decision = kDecisionNames[static_cast<std::size_t>(r.decision)];
  auto to = std::back_inserter(out);
  if (format == config::LogFormat::json) {
    fmt::format_to(to, R"("client":")");
    append_json_escaped(out, r.client);
    fmt::format_to(to, R"(","method":")");
    append_json_escaped(out, r.method);
    fmt::format_to(to, R"(","target":")");
    append_json_escaped(out, r.target);
    fmt::format_to(to, R"(","route":")");
    append_json_escaped(out, r.route);
    fmt::format_to(to,
                   R"(","decision":"{}","status":{},"key":"{:016x}","upstream_ms":{:.3f},)"
                   R"("duration_ms":{:.3f}}})",
                   decision, r.status, r.key_hash, milliseconds(r.upstream), milliseconds(r.total));
    return;
  }
  fmt::format_to(to, "{} \"", r.client);
  append_json_escaped(out, r.method);
  out.push_back(' ');
  append_json_escaped(out, r.target);
  fmt::format_to(to, "\" {} route={} decision={} key={:016x} upstream_ms={:.3f} duration_ms={:.3f}",
                 r.status, r.route.empty() ? "-" : r.route, decision, r.key_hash,
                 milliseconds(r.upstream), milliseconds(r.total));
}

}  // namespace

AccessLog::AccessLog() : pool_(std::make_shared<spdlog::details::thread_pool>(kQueuedLines, 1)) {
  auto sink = std::make_shared<spdlog::sinks::stdout_sink_mt>();
  logger_ = std::make_shared<spdlog::async_logger>("access", std::move(sink), pool_,
                                                   spdlog::async_overflow_policy::overrun_oldest);
  logger_->set_pattern("%v");  // the line carries its own time, formatted per line's format
}

AccessLog::~AccessLog() {
  logger_->flush();
  // Join the log thread first: the lines it still holds keep the logger alive, and the join is
  // what orders their release before ours.
  pool_.reset();
}

void AccessLog::write(config::LogFormat format, const AccessRecord& record) {
  fmt::memory_buffer line;  // inline storage: no allocation for an ordinary line
  const auto now = std::chrono::system_clock::now();
  const auto millis =
      std::chrono::duration_cast<std::chrono::milliseconds>(now.time_since_epoch()).count() % 1000;
  // The time in UTC, then the fields; a JSON line opens its object with the time.
  const std::tm utc = fmt::gmtime(std::chrono::system_clock::to_time_t(now));
  if (format == config::LogFormat::json) {
    fmt::format_to(std::back_inserter(line), R"({{"time":"{:%Y-%m-%dT%H:%M:%S}.{:03}Z",)", utc,
                   millis);
  } else {
    fmt::format_to(std::back_inserter(line), "{:%Y-%m-%dT%H:%M:%S}.{:03}Z ", utc, millis);
  }
  format_into(line, format, record);
  logger_->info(std::string_view(line.data(), line.size()));
}

std::string AccessLog::format(config::LogFormat format, const AccessRecord& record) {
  fmt::memory_buffer line;
  format_into(line, format, record);
  return fmt::to_string(line);
}

}  // namespace sluice::telemetry
