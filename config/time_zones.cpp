#include "config/time_zones.hpp"

#include <date/tz.h>

#include <map>
#include <memory>
#include <mutex>

namespace sluice::config {
namespace {

/// A zone of the date library's database (the same rules C++20's <chrono> zones follow).
class DatabaseZone final : public limiter::TimeZone {
 public:
  explicit DatabaseZone(const date::time_zone* zone) : zone_(zone) {}

  std::string_view name() const noexcept override { return zone_->name(); }
  std::chrono::local_seconds to_local(std::chrono::sys_seconds t) const noexcept override {
    const date::local_seconds local = zone_->to_local(date::sys_seconds(t.time_since_epoch()));
    return std::chrono::local_seconds(local.time_since_epoch());
  }
  std::chrono::sys_seconds to_utc(std::chrono::local_seconds local) const noexcept override {
    const date::local_seconds time(local.time_since_epoch());
    const date::local_info info = zone_->get_info(time);
    if (info.result == date::local_info::nonexistent) {
      // Skipped by a clock change: the instant the clocks jumped.
      return std::chrono::sys_seconds(info.second.begin.time_since_epoch());
    }
    // Unique, or repeated (the first of the two): before the earlier offset.
    return std::chrono::sys_seconds(time.time_since_epoch() - info.first.offset);
  }

 private:
  const date::time_zone* zone_;
};

}  // namespace

const limiter::TimeZone* time_zone_named(std::string_view name, std::string& error) {
  static std::mutex mutex;
  static std::map<std::string, std::unique_ptr<DatabaseZone>, std::less<>> zones;
  const std::lock_guard lock(mutex);
  if (const auto found = zones.find(name); found != zones.end()) {
    return found->second.get();
  }
  try {
    const date::time_zone* zone = date::locate_zone(name);
    return zones.emplace(std::string(name), std::make_unique<DatabaseZone>(zone))
        .first->second.get();
  } catch (const std::exception&) {
    error = "\"" + std::string(name) +
            "\" is not a time zone of the system's database (an IANA name: Europe/Berlin, "
            "America/New_York, UTC)";
    return nullptr;
  }
}

}  // namespace sluice::config
