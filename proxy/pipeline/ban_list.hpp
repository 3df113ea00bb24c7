#pragma once

#include <memory>
#include <optional>

#include "config/proxy_config.hpp"
#include "limiter/limiter.hpp"
#include "proxy/pipeline/ip_address.hpp"

namespace sluice::pipeline {

/// SPEC §2 `ban`: a client IP limited `after` times within `within` gets 403 for `for`.
/// Built on the limiter engine, so it is sharded, bounded by max_keys and forgets idle clients:
/// strikes are a sliding log (`after` per `within`); a ban is a one-token bucket that refills
/// once per `for`, so taking its token bans for exactly `for`. Thread-safe.
class BanList {
 public:
  BanList(const config::BanOptions& options, std::uint64_t max_keys);

  /// How much longer `client` stays banned; nullopt when it is not banned.
  std::optional<limiter::Duration> banned_for(const IpAddress& client, limiter::TimePoint now);
  /// Records that `client` was limited; returns true when that bans it.
  bool strike(const IpAddress& client, limiter::TimePoint now);
  /// Ends `client`'s ban and forgets its strikes (an operator's unban); false when it was not
  /// banned.
  bool lift(const IpAddress& client, limiter::TimePoint now);

  static limiter::KeyHash hash(const IpAddress& client) noexcept;

 private:
  std::unique_ptr<limiter::Limiter> strikes_;
  std::unique_ptr<limiter::Limiter> bans_;
};

}  // namespace sluice::pipeline
