#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "config/proxy_config.hpp"
#include "limiter/limiter.hpp"
#include "limiter/limiter_options.hpp"
#include "proxy/pipeline/ip_address.hpp"

namespace sluice::pipeline {

/// An override set at runtime (SPEC §10 `PUT /limiters/NAME/KEY`), as written and shared.
struct OverrideEntry {
  std::string limiter;     ///< The limiter's name.
  std::string key;         ///< As GET /limiters/NAME/KEY takes it: parts joined with `+`.
  std::string parameters;  ///< The parameters given: a JSON object's text.
  limiter::TimePoint expires_at{};

  bool operator==(const OverrideEntry&) const = default;
};

/// A ban set at runtime (SPEC §10 `PUT /bans/IP`).
struct BanEntry {
  IpAddress ip;
  limiter::TimePoint expires_at{};

  bool operator==(const BanEntry&) const = default;
};

/// What one runtime override counts with: its own limiter, made from the limiter's parameters
/// with the override's laid over them.
struct OverrideInstance {
  limiter::LimiterOptions base;     ///< The limiter's own parameters, as they were.
  limiter::LimiterOptions options;  ///< With the override's.
  std::unique_ptr<limiter::Limiter> limiter;
};

/// The runtime overrides and bans as the pipeline reads them: immutable once published.
struct RuntimeSnapshot {
  struct Override {
    OverrideEntry entry;
    std::shared_ptr<OverrideInstance> instance;  ///< Null: its parameters no longer apply.
  };
  struct TextHash {
    using is_transparent = void;
    std::size_t operator()(std::string_view text) const noexcept {
      return std::hash<std::string_view>{}(text);
    }
  };

  std::vector<Override> overrides;
  /// lookup_key(limiter, key as the pipeline forms it) → index into `overrides`.
  std::unordered_map<std::string, std::size_t, TextHash, std::equal_to<>> by_key;
  std::vector<BanEntry> bans;

  /// The map's key for `limiter`'s key `internal_key`, in `out` (a reused buffer).
  static void lookup_key(std::string_view limiter, std::string_view internal_key, std::string& out);
  /// The override in force for a limiter's key at `now`, if any.
  const Override* override_for(std::string_view limiter, std::string_view internal_key,
                               limiter::TimePoint now) const;
  /// How much longer `client` stays banned at runtime; nullopt when it is not.
  std::optional<limiter::Duration> banned_for(const IpAddress& client,
                                              limiter::TimePoint now) const noexcept;
};

/// The runtime overrides and bans of SPEC §10, kept apart from the configuration's generations so
/// that they survive a reload: the server owns one and hands it to every pipeline. Writes (the
/// admin port, or what a shared store last said) publish a new snapshot; the request path reads
/// nothing but an atomic flag while there are none, and one version check after that (a lock
/// only on the first request a thread makes after a change).
///
/// An override's limiter is kept as long as the same limiter, key and parameters are in force,
/// so that republishing (a reload, a shared store read again) keeps its counts. Once it is not,
/// it is kept for kRetiredFor more, for the requests still holding it.
class RuntimeControl {
 public:
  static constexpr std::chrono::hours kRetiredFor{1};

  RuntimeControl();

  /// Adds or replaces (same limiter and key) an override; republishes for `config`.
  void set_override(OverrideEntry entry, const config::ProxyConfig& config, limiter::TimePoint now);
  /// Ends an override early; false when there was none in force.
  bool remove_override(std::string_view limiter, std::string_view key,
                       const config::ProxyConfig& config, limiter::TimePoint now);
  void set_ban(BanEntry entry, const config::ProxyConfig& config, limiter::TimePoint now);
  /// False when `ip` was not banned at runtime.
  bool remove_ban(const IpAddress& ip, const config::ProxyConfig& config, limiter::TimePoint now);
  /// Everything at once, as a shared store holds it; republishes only on a change (or when
  /// `config` is another one than last time).
  void replace(std::vector<OverrideEntry> overrides, std::vector<BanEntry> bans,
               const config::ProxyConfig& config, limiter::TimePoint now);
  /// Drops what expired; republishes for `config` when `reloaded` (each override's parameters
  /// laid over the limiter's new ones, where they still apply).
  void refresh(const config::ProxyConfig& config, limiter::TimePoint now, bool reloaded);

  /// Those in force at `now`.
  std::vector<OverrideEntry> overrides(limiter::TimePoint now) const;
  std::vector<BanEntry> bans(limiter::TimePoint now) const;
  /// The parameters of `entry` laid over `limiter`'s: nullopt with the problems when they do not
  /// hold.
  static std::optional<limiter::LimiterOptions> options_for(const OverrideEntry& entry,
                                                            const config::LimiterConfig& limiter,
                                                            std::vector<std::string>& problems);

  /// Request path: whether anything is set at runtime at all.
  bool any() const noexcept { return any_.load(std::memory_order_acquire); }
  /// Request path: the snapshot in force, held by the calling thread until it sees the next.
  const RuntimeSnapshot& snapshot() const;

 private:
  void publish(const config::ProxyConfig& config, limiter::TimePoint now);  ///< Under mutex_.

  const std::uint64_t id_;  ///< Tells apart controls in a thread's cache.
  mutable std::mutex mutex_;
  std::vector<OverrideEntry> override_entries_;
  std::vector<BanEntry> ban_entries_;
  const config::ProxyConfig* published_for_ = nullptr;
  std::shared_ptr<const RuntimeSnapshot> current_;
  std::vector<std::pair<std::shared_ptr<OverrideInstance>, std::chrono::steady_clock::time_point>>
      retired_;
  std::atomic<std::uint64_t> version_{0};
  std::atomic<bool> any_{false};
};

}  // namespace sluice::pipeline
