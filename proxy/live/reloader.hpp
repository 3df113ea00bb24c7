#pragma once

#include <chrono>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "proxy/live/generation.hpp"
#include "proxy/telemetry/metrics.hpp"

namespace sluice::live {

struct ReloadReport {
  bool ok = false;
  std::vector<std::string> errors;          ///< Every problem, `FILE:LINE:COL: key: message`.
  std::size_t kept_state = 0;               ///< Limiters (and the ban list) that kept their counts.
  std::vector<std::string> restart_needed;  ///< Changed fields a reload cannot apply.
};

/// The last reload and what asked for it, for the admin page.
struct LastReload {
  ReloadReport report;
  std::string trigger;  ///< "SIGHUP", "POST /reload", …
  std::chrono::system_clock::time_point at;
};

/// Sets the level of the proxy's own log (`log.level`: trace … critical, or off).
void apply_log_level(const std::string& level);

/// Logs a reload's result: what was kept, or every error (SPEC §3).
void log_reload(const ReloadReport& report, std::string_view trigger);

/// SIGHUP and POST /reload (SPEC §3): reads the file again; if it is valid, publishes a new
/// generation that shares the unchanged limiters' state, else keeps the old one. `listen`,
/// `admin` and `threads` take effect on the next start only; a change to them is reported.
class Reloader {
 public:
  /// `fetch` gets the JWK Sets a new configuration names by URL (see Generation).
  Reloader(std::string path, LiveConfig& live, telemetry::Metrics& metrics, KeySetFetch fetch = {})
      : path_(std::move(path)), live_(live), metrics_(metrics), fetch_(std::move(fetch)) {}

  /// Serialised: two reloads at once run one after the other. Logs the result (log_reload)
  /// with `trigger` and keeps it as the last reload.
  ReloadReport reload(std::string_view trigger = "reload");
  /// The last reload's result; nullopt before the first. Thread-safe.
  std::optional<LastReload> last() const;

 private:
  std::string path_;
  LiveConfig& live_;
  telemetry::Metrics& metrics_;
  KeySetFetch fetch_;
  std::mutex mutex_;  ///< Serialises reloads.
  mutable std::mutex last_mutex_;
  std::optional<LastReload> last_;

  ReloadReport load_and_publish();
};

}  // namespace sluice::live
