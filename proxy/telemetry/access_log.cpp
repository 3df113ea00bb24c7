#include "proxy/telemetry/access_log.hpp"

#include <fmt/chrono.h>
#include <fmt/format.h>
#include <spdlog/async.h>
#include <spdlog/async_logger.h>
#include <spdlog/sinks/stdout_sinks.h>

#include <algorithm>
#include <array>
#include <iterator>

#include "proxy/telemetry/json_escape.hpp"

namespace sluice::telemetry {
namespace {

constexpr std::size_t kQueuedLines = 8192;

double milliseconds(limiter::Duration duration) {
  return std::chrono::duration<double, std::milli>(duration).count();
}

/// The request target, escaped, with the value of each query parameter named in `secret` shown
/// as `***`.
void append_target(fmt::memory_buffer& out, std::string_view target,
                   std::span<const std::string> secret) {
  const std::size_t mark = target.find('?');
  if (secret.empty() || mark == std::string_view::npos) {
    append_json_escaped(out, target);
    return;
  }
  append_json_escaped(out, target.substr(0, mark + 1));
  std::string_view query = target.substr(mark + 1);
  for (;;) {
    const std::size_t end = query.find('&');
    const std::string_view item = query.substr(0, end);
    const std::size_t equals = item.find('=');
    if (equals != std::string_view::npos &&
        std::find(secret.begin(), secret.end(), item.substr(0, equals)) != secret.end()) {
      append_json_escaped(out, item.substr(0, equals + 1));
      out.append(std::string_view("***"));
    } else {
      append_json_escaped(out, item);
    }
    if (end == std::string_view::npos) {
      return;
    }
    out.push_back('&');
    query.remove_prefix(end + 1);
  }
}

void format_into(fmt::memory_buffer& out, config::LogFormat format, const AccessRecord& r) {
  const std::string_view decision = kMetricDecisionNames[static_cast<std::size_t>(r.decision)];
  auto to = std::back_inserter(out);
  if (format == config::LogFormat::json) {
    fmt::format_to(to, R"("client":")");
    append_json_escaped(out, r.client);
    fmt::format_to(to, R"(","method":")");
    append_json_escaped(out, r.method);
    fmt::format_to(to, R"(","target":")");
    append_target(out, r.target, r.secret_query);
    fmt::format_to(to, R"(","route":")");
    append_json_escaped(out, r.route);
    fmt::format_to(to,
                   R"(","decision":"{}","status":{},"key":"{:016x}","upstream_ms":{:.3f},)"
                   R"("duration_ms":{:.3f})",
                   decision, r.status, r.key_hash, milliseconds(r.upstream), milliseconds(r.total));
    if (r.cost) {
      fmt::format_to(to, R"(,"cost":{})", *r.cost);
    }
    if (!r.cost_problem.empty()) {
      fmt::format_to(to, R"(,"cost_problem":"{}")", r.cost_problem);
    }
    out.push_back('}');
    return;
  }
  fmt::format_to(to, "{} \"", r.client);
  append_json_escaped(out, r.method);
  out.push_back(' ');
  append_target(out, r.target, r.secret_query);
  fmt::format_to(to, "\" {} route={} decision={} key={:016x} upstream_ms={:.3f} duration_ms={:.3f}",
                 r.status, r.route.empty() ? "-" : r.route, decision, r.key_hash,
                 milliseconds(r.upstream), milliseconds(r.total));
  if (r.cost) {
    fmt::format_to(to, " cost={}", *r.cost);
  }
  if (!r.cost_problem.empty()) {
    fmt::format_to(to, " cost_problem=\"{}\"", r.cost_problem);
  }
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

std::uint64_t AccessLog::dropped() const { return pool_->overrun_counter(); }

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
