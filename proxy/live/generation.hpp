#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <vector>

#include "config/proxy_config.hpp"
#include "proxy/cost/response_meter.hpp"
#include "proxy/pipeline/pipeline.hpp"
#include "proxy/telemetry/heavy_hitters.hpp"
#include "proxy/telemetry/metrics.hpp"

namespace sluice::tls {
struct Contexts;
}

namespace sluice::live {

/// Fetches a JWK Set from its URL (SPEC §8), with the configuration's upstream TLS context; nullopt
/// and `error` when it cannot. Given by the layer that has the network (http/jwks_client.hpp).
using KeySetFetch = std::function<std::optional<auth::KeySet>(
    const std::string& url, const tls::Contexts& contexts, const config::ProxyConfig& config,
    std::string& error)>;

/// One loaded configuration and everything built from it: the pipeline and the metric series
/// its routes write. Immutable once built; a reload builds the next one beside it. A connection
/// holds the generation it serves a request with, so a reload never pulls a route, a limiter or
/// a config field from under a request in flight.
struct Generation {
  /// `previous` (a reload) lends its limiters' state where their definition did not change,
  /// and its fetched key sets where their URL did not. Reads the certificates and key files the
  /// configuration names, and fetches with `fetch` the key sets it has not got (without `fetch`,
  /// as `sluice check`, they stay empty); throws config::ConfigError when one cannot be used.
  Generation(std::shared_ptr<const config::ProxyConfig> loaded, const Generation* previous,
             telemetry::Metrics& metrics, const KeySetFetch& fetch = {});

  std::shared_ptr<const config::ProxyConfig> config;
  /// The TLS listeners' and https:// upstreams' contexts (tls/contexts.hpp). Built first: a
  /// certificate that cannot be used stops the build before anything else is made.
  std::shared_ptr<const tls::Contexts> tls;
  /// Refers to *config. Mutable: what changes in it is the limiters' counts, which are
  /// thread-safe; the configuration it was built from does not.
  mutable pipeline::Pipeline pipeline;
  std::vector<std::vector<telemetry::RouteCounters*>> route_counters;        ///< [route][loop]
  std::vector<std::vector<telemetry::UpstreamCounters*>> upstream_counters;  ///< [route][loop]
  std::vector<telemetry::RouteCounters*> unrouted;  ///< Requests refused before a route, and 404s.
  std::vector<std::vector<telemetry::JwtCounters*>> jwt_counters;  ///< [provider][loop]
  /// [limiter][loop]; empty for a limiter charged at admission only.
  std::vector<std::vector<telemetry::CostCounters*>> cost_counters;
  /// [route]: how its responses' cost is read (its `cost_from`), or null.
  std::vector<std::unique_ptr<const cost::MeterSpec>> meter_specs;
  /// Each limiter's heaviest keys over the last minute (GET /top); null when `top_keys` is 0.
  /// A reload starts them afresh.
  std::unique_ptr<telemetry::HeavyHitters> heavy_hitters;
  /// The query parameters some limiter keys on: the access log hides their values.
  std::vector<std::string> secret_query;

  /// Fills the providers' fetched key sets that are still empty (see the constructor).
  void fetch_key_sets(const KeySetFetch& fetch) const;

  telemetry::RouteCounters& counters_for(const config::Route* route, std::size_t loop) const;
  telemetry::JwtCounters& jwt_counters_for(const config::JwtProviderConfig& provider,
                                           std::size_t loop) const;
  telemetry::UpstreamCounters& upstream_counters_for(const config::Route& route,
                                                     std::size_t loop) const;
  const cost::MeterSpec* meter_spec_for(const config::Route& route) const {
    return meter_specs[static_cast<std::size_t>(&route - config->routes.data())].get();
  }
  /// The counters of a limiter charged after the response.
  telemetry::CostCounters& cost_counters_for(const config::LimiterConfig& limiter,
                                             std::size_t loop) const;
};

/// The configuration in force. A reload publishes a new generation; readers see it from their
/// next request on. Readers do not lock: they compare a version number and only take the lock
/// to fetch a newer generation (see GenerationCache).
class LiveConfig {
 public:
  explicit LiveConfig(std::shared_ptr<const Generation> first) : current_(std::move(first)) {}

  std::shared_ptr<const Generation> current() const {
    const std::lock_guard lock(mutex_);
    return current_;
  }
  std::uint64_t version() const noexcept { return version_.load(std::memory_order_acquire); }
  void publish(std::shared_ptr<const Generation> next) {
    const std::lock_guard lock(mutex_);
    current_ = std::move(next);
    version_.fetch_add(1, std::memory_order_release);
  }

 private:
  mutable std::mutex mutex_;
  std::shared_ptr<const Generation> current_;
  std::atomic<std::uint64_t> version_{0};
};

/// One event loop's view of the live generation: a version check per request, a lock only
/// after a reload. Touched by its loop's thread only.
class GenerationCache {
 public:
  explicit GenerationCache(const LiveConfig& live)
      : live_(live), version_(live.version()), generation_(live.current()) {}

  const std::shared_ptr<const Generation>& get() {
    if (const std::uint64_t version = live_.version(); version != version_) {
      generation_ = live_.current();
      version_ = version;
    }
    return generation_;
  }

 private:
  const LiveConfig& live_;
  std::uint64_t version_;
  std::shared_ptr<const Generation> generation_;
};

}  // namespace sluice::live
