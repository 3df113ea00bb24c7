#include "proxy/live/reloader.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>

#include "config/load_config.hpp"

namespace sluice::live {
namespace {

/// Listeners bind at start: a reload changes their TLS settings and certificates, not where or
/// whether they speak TLS.
bool same_addresses(const std::vector<config::Listener>& next,
                    const std::vector<config::Listener>& before) {
  return std::equal(next.begin(), next.end(), before.begin(), before.end(),
                    [](const config::Listener& a, const config::Listener& b) {
                      return a.address == b.address && a.tls.has_value() == b.tls.has_value();
                    });
}

}  // namespace

void apply_log_level(const std::string& level) {
  spdlog::set_level(spdlog::level::from_str(level));
}

void log_reload(const ReloadReport& report, std::string_view trigger) {
  if (!report.ok) {
    spdlog::error("{}: the configuration has {} error(s); still running on the old one", trigger,
                  report.errors.size());
    for (const std::string& error : report.errors) {
      spdlog::error("{}", error);
    }
    return;
  }
  spdlog::info("{}: configuration reloaded; {} limiter(s) kept their state", trigger,
               report.kept_state);
  for (const std::string& field : report.restart_needed) {
    spdlog::warn("{}: `{}` changed; it takes effect on the next start", trigger, field);
  }
}

ReloadReport Reloader::reload(std::string_view trigger) {
  const std::lock_guard lock(mutex_);
  ReloadReport report = load_and_publish();
  log_reload(report, trigger);
  const std::lock_guard last_lock(last_mutex_);
  last_ = LastReload{report, std::string(trigger), std::chrono::system_clock::now()};
  return report;
}

std::optional<LastReload> Reloader::last() const {
  const std::lock_guard lock(last_mutex_);
  return last_;
}

ReloadReport Reloader::load_and_publish() {
  ReloadReport report;
  std::shared_ptr<const config::ProxyConfig> next;
  const auto refuse = [&](const config::ConfigError& error) {
    report.errors = error.lines();
    if (report.errors.empty()) {
      report.errors.emplace_back(error.what());
    }
    metrics_.count_reload(false);
    return report;
  };
  try {
    next = std::make_shared<const config::ProxyConfig>(config::load_config(path_));
  } catch (const config::ConfigError& error) {
    return refuse(error);
  }
  const std::shared_ptr<const Generation> previous = live_.current();
  const config::ProxyConfig& before = *previous->config;
  if (!same_addresses(next->listeners, before.listeners)) {
    report.restart_needed.emplace_back("listen");
  }
  if (next->decide.has_value() != before.decide.has_value() ||
      (next->decide && !same_addresses({*next->decide}, {*before.decide}))) {
    report.restart_needed.emplace_back("decide");
  }
  if (next->admin.has_value() != before.admin.has_value() ||
      (next->admin &&
       (next->admin->host != before.admin->host || next->admin->port != before.admin->port))) {
    report.restart_needed.emplace_back("admin");
  }
  // The Redis store is connected at start (max_keys is per limiter and does reload).
  if (next->store.type != before.store.type || (next->store.type == config::StoreType::redis &&
                                                !(next->store.redis == before.store.redis))) {
    report.restart_needed.emplace_back("store");
  }
  if (next->threads != before.threads) {
    report.restart_needed.emplace_back("threads");
  }
  std::shared_ptr<const Generation> generation;
  try {  // certificates and keys are read here: one that cannot be used keeps the old ones
    generation = std::make_shared<const Generation>(next, previous.get(), metrics_, fetch_);
  } catch (const config::ConfigError& error) {
    return refuse(error);
  }
  report.kept_state = generation->pipeline.kept_state();
  live_.publish(std::move(generation));
  apply_log_level(next->log.level);
  metrics_.count_reload(true);
  report.ok = true;
  return report;
}

}  // namespace sluice::live
