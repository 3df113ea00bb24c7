#include "proxy/server/ocsp_refresher.hpp"

#include <spdlog/spdlog.h>

#include <ctime>

#include "proxy/http/fetch_client.hpp"
#include "proxy/tls/contexts.hpp"
#include "proxy/tls/ocsp_fetch.hpp"

namespace sluice::server {

io::Awaitable<void> refresh_ocsp_staples(const live::LiveConfig& live,
                                         telemetry::Metrics& metrics) {
  using Clock = std::chrono::steady_clock;
  io::Timer timer(co_await net::this_coro::executor);
  for (;;) {
    timer.expires_after(kOcspTick);
    if (auto [stopped] = co_await timer.async_wait(io::use_nothrow); stopped) {
      co_return;
    }
    const std::shared_ptr<const live::Generation> generation = live.current();
    for (const std::shared_ptr<tls::OcspFetch>& fetch : generation->tls->ocsp_fetches) {
      if (Clock::now() < fetch->due) {
        continue;
      }
      // Named, not a temporary in the co_await: GCC 12 destroys such temporaries twice.
      http::FetchRequest request{.url = fetch->url(),
                                 .accept = "application/ocsp-response",
                                 .body_limit = kMaxOcspBytes,
                                 .too_large = "the answer is over 64 KiB"};
      // http:// only (tls/ocsp_fetch.hpp): no TLS context.
      http::Fetched fetched = co_await http::fetch(
          std::move(request), nullptr, generation->config->upstream_tls, kOcspFetchTimeout);
      tls::OcspStaple::Checked taken;
      if (fetched.error.empty()) {
        taken = fetch->take(fetched.body);
      } else {
        taken.why = fetch->responder() + ": " + fetched.error;
      }
      metrics.count_ocsp_fetch(fetch->name(), taken.staple != nullptr);
      if (taken.staple != nullptr) {
        spdlog::debug("{}: OCSP response from {} stapled", fetch->name(), fetch->responder());
      } else {
        spdlog::warn("{}: OCSP stapling: {} ({})", fetch->name(), taken.why,
                     taken.revoked ? "nothing is stapled" : "the last good response is kept");
      }
      fetch->due =
          Clock::now() + tls::OcspFetch::refresh_after(taken.staple.get(), std::time(nullptr));
    }
  }
}

}  // namespace sluice::server
