#pragma once

#include "proxy/io/net.hpp"
#include "proxy/live/generation.hpp"
#include "proxy/telemetry/metrics.hpp"

namespace sluice::server {

/// How often the refresher looks at the providers; an unknown `kid` waits at most this long.
inline constexpr io::Duration kJwksTick = std::chrono::seconds(1);
/// The least time between two fetches of one key set for unknown `kid`s, or after a failure:
/// tokens naming made-up keys cannot make sluice hammer the identity provider (SPEC §8).
inline constexpr io::Duration kJwksRefetchPause = std::chrono::seconds(10);

/// Keeps the fetched JWK Sets of the configuration in force fresh (SPEC §8), on the event loop it
/// runs on, until that loop stops: each provider's set every `refresh`; at once, but at most
/// every kJwksRefetchPause, when a token named a key the set lacks (keys rotate); a set still
/// empty, as soon as it can. A failed fetch keeps the last good set, is logged and counted
/// (sluice_jwks_refreshes_total), and is tried again after kJwksRefetchPause.
io::Awaitable<void> refresh_key_sets(const live::LiveConfig& live, telemetry::Metrics& metrics);

}  // namespace sluice::server
