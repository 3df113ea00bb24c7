#pragma once

#include "proxy/io/net.hpp"
#include "proxy/live/generation.hpp"
#include "proxy/telemetry/metrics.hpp"

namespace sluice::server {

/// How often the refresher looks at the fetches; a new certificate is asked for within this.
inline constexpr io::Duration kOcspTick = std::chrono::seconds(1);
/// How long one fetch from a responder may take.
inline constexpr io::Duration kOcspFetchTimeout = std::chrono::seconds(10);
/// The largest OCSP response taken: a few KB is usual.
inline constexpr std::size_t kMaxOcspBytes = 64 * 1024;

/// Keeps the OCSP responses the TLS listeners of the configuration in force staple fresh, on the
/// event loop it runs on, until that loop stops (tls/ocsp_fetch.hpp): a certificate's first at
/// once, then again halfway to the response's nextUpdate (within 1 min to 1 h). A failed fetch,
/// or an answer that is not a good, current one its issuer signed, is logged and counted
/// (sluice_ocsp_fetches_total) and tried again after 5 min, the staple there is kept (unless the
/// answer says `revoked`); one past its nextUpdate is no longer sent.
io::Awaitable<void> refresh_ocsp_staples(const live::LiveConfig& live, telemetry::Metrics& metrics);

}  // namespace sluice::server
