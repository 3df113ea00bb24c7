#include "proxy/server/jwks_refresher.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <vector>

#include "config/url.hpp"
#include "proxy/http/jwks_client.hpp"
#include "proxy/tls/contexts.hpp"

namespace sluice::server {
namespace {

using Clock = std::chrono::steady_clock;

/// When one provider's key set is fetched next. Kept by name and URL, so that a reload that
/// leaves them alone keeps the schedule (and the set: see Identity).
struct Schedule {
  std::string provider;
  std::string url;
  Clock::time_point due;
  Clock::time_point last_fetch;
  bool unknown_kid = false;  ///< A token named a key the set lacks since the last fetch.
};

Schedule& schedule_for(std::vector<Schedule>& schedules, const config::JwtProviderConfig& provider,
                       bool has_keys, Clock::time_point now) {
  for (Schedule& schedule : schedules) {
    if (schedule.provider == provider.name && schedule.url == provider.jwks_url) {
      return schedule;
    }
  }
  // Its first set was fetched as the configuration was built: the next is due after `refresh`.
  return schedules.emplace_back(Schedule{.provider = provider.name,
                                         .url = provider.jwks_url,
                                         .due = has_keys ? now + provider.jwks_refresh : now,
                                         .last_fetch = has_keys ? now : Clock::time_point{},
                                         .unknown_kid = false});
}

}  // namespace

io::Awaitable<void> refresh_key_sets(const live::LiveConfig& live, telemetry::Metrics& metrics) {
  io::Timer timer(co_await net::this_coro::executor);
  std::vector<Schedule> schedules;
  for (;;) {
    timer.expires_after(kJwksTick);
    if (auto [stopped] = co_await timer.async_wait(io::use_nothrow); stopped) {
      co_return;
    }
    const std::shared_ptr<const live::Generation> generation = live.current();
    for (const config::JwtProviderConfig& provider : generation->config->jwt_providers) {
      if (provider.jwks_url.empty()) {
        continue;
      }
      auth::JwtProvider& keys = generation->pipeline.identity().provider(provider);
      const Clock::time_point now = Clock::now();
      Schedule& schedule = schedule_for(schedules, provider, !keys.keys()->keys.empty(), now);
      schedule.unknown_kid = keys.wants_keys() || schedule.unknown_kid;
      const bool due = now >= schedule.due ||
                       (schedule.unknown_kid && now >= schedule.last_fetch + kJwksRefetchPause);
      if (!due) {
        continue;
      }
      schedule.last_fetch = now;
      schedule.unknown_kid = false;
      http::JwksFetched fetched =
          co_await http::fetch_jwks(provider.jwks_url, generation->tls->upstream.get(),
                                    generation->config->upstream_tls, http::kJwksFetchTimeout);
      metrics.count_jwks_refresh(provider.name, fetched.keys.has_value());
      if (fetched.keys) {
        spdlog::debug("auth.jwt.{}: {} keys from {}", provider.name, fetched.keys->keys.size(),
                      config::redact_url(provider.jwks_url));
        keys.replace_keys(std::make_shared<const auth::KeySet>(std::move(*fetched.keys)));
        schedule.due = Clock::now() + provider.jwks_refresh;
      } else {
        spdlog::warn("auth.jwt.{}: cannot fetch {}: {} (the last good key set is kept)",
                     provider.name, config::redact_url(provider.jwks_url), fetched.error);
        schedule.due = Clock::now() + kJwksRefetchPause;
      }
    }
  }
}

}  // namespace sluice::server
