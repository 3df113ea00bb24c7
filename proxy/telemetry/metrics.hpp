#pragma once

#include <algorithm>
#include <array>
#include <atomic>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "limiter/clock.hpp"

namespace sluice::telemetry {

/// The `decision` label of sluice_requests_total (SPEC §5), plus `no_route` and `unauthorized`
/// (a route's token refused: SPEC §8).
enum class MetricDecision : std::uint8_t {
  allowed,
  delayed,
  limited,
  denied,
  shadow_limited,
  no_route,
  unauthorized
};
inline constexpr std::size_t kMetricDecisions = 7;
/// Their names, as the metric's label and the access log say them.
inline constexpr std::array<std::string_view, kMetricDecisions> kMetricDecisionNames{
    "allowed", "delayed", "limited", "denied", "shadow_limited", "no_route", "unauthorized"};

/// The `result` label of sluice_jwt_verifications_total (SPEC §8): a token verified now, one
/// verified earlier on the same loop (`cached`), the check one failed (auth/jwt_verifier.hpp's
/// JwtCheck, in its order), or no token at all.
inline constexpr std::size_t kJwtResults = 12;
inline constexpr std::array<std::string_view, kJwtResults> kJwtResultNames{
    "verified", "malformed",     "algorithm", "header",   "unknown_key", "signature",
    "expired",  "not_yet_valid", "issuer",    "audience", "cached",      "missing"};
inline constexpr std::size_t kJwtCached = 10;
inline constexpr std::size_t kJwtMissing = 11;

/// The `kind` label of sluice_upstream_errors_total.
enum class UpstreamErrorKind : std::uint8_t { connect, timeout, broken };
/// The admin port's writes (SPEC §10), by action and result (sluice_admin_writes_total).
enum class AdminAction : std::uint8_t { reset, override, unoverride, ban, unban, reload };
inline constexpr std::array<std::string_view, 6> kAdminActionNames{
    "reset", "override", "unoverride", "ban", "unban", "reload"};
/// ok; refused: no or a wrong token, or not on a loopback address (401, 403); invalid: what was
/// asked cannot be done (400, 404, 422); failed: the shared store did not answer (503).
enum class AdminResult : std::uint8_t { ok, refused, invalid, failed };
inline constexpr std::array<std::string_view, 4> kAdminResultNames{"ok", "refused", "invalid",
                                                                   "failed"};

inline constexpr std::size_t kUpstreamErrorKinds = 3;

/// The decision service's Envoy rate-limit calls (SPEC §11) by result (sluice_rls_requests_total):
/// answered OK or OVER_LIMIT; OK for a domain no `rls` entry names; refused as malformed
/// (INVALID_ARGUMENT and the like); not decided since the limiter store failed closed.
enum class RlsResult : std::uint8_t { ok, over_limit, unknown_domain, invalid, unavailable };
inline constexpr std::array<std::string_view, 5> kRlsResultNames{
    "ok", "over_limit", "unknown_domain", "invalid", "unavailable"};

/// Upper bounds of sluice_request_duration_seconds, in seconds: 0.5 ms to 10 s, roughly ×2.5.
inline constexpr std::array<double, 14> kDurationBuckets{
    0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10};

/// A counter that only its event loop's thread writes, and the scrape reads: a plain load and
/// store, no locked instruction on the request path.
class LoopCounter {
 public:
  void add(std::uint64_t n = 1) noexcept {
    value_.store(value_.load(std::memory_order_relaxed) + n, std::memory_order_relaxed);
  }
  std::uint64_t value() const noexcept { return value_.load(std::memory_order_relaxed); }

 private:
  std::atomic<std::uint64_t> value_{0};
};

/// One route's counters on one event loop. Cache-line aligned: loops never share a line.
struct alignas(64) RouteCounters {
  std::array<LoopCounter, kMetricDecisions> decisions;
  std::array<LoopCounter, kDurationBuckets.size() + 1> buckets;  ///< The last one is +Inf.
  LoopCounter duration_ns;

  void count(MetricDecision decision) noexcept {
    decisions[static_cast<std::size_t>(decision)].add();
  }
  void observe(limiter::Duration duration) noexcept;
};

/// One event loop's Envoy rate-limit calls, by RlsResult.
struct alignas(64) RlsCounters {
  std::array<LoopCounter, kRlsResultNames.size()> results;

  void count(RlsResult result) noexcept { results[static_cast<std::size_t>(result)].add(); }
};

/// One upstream's failures on one event loop.
struct alignas(64) UpstreamCounters {
  std::array<LoopCounter, kUpstreamErrorKinds> errors;

  void count(UpstreamErrorKind kind) noexcept { errors[static_cast<std::size_t>(kind)].add(); }
};

/// One JWT provider's verifications on one event loop, by result (kJwtResultNames).
struct alignas(64) JwtCounters {
  std::array<LoopCounter, kJwtResults> results;
};

/// What a response said it cost (SPEC §9): a usable value, nothing, or a value that could not
/// be used (negative, fractional, too large, not a number): the last two charge the estimate.
enum class CostReading : std::uint8_t { reported, missing, invalid };
inline constexpr std::array<std::string_view, 3> kCostReadingNames{"reported", "missing",
                                                                   "invalid"};

/// One limiter charged after the response, on one event loop: what it was charged, and how its
/// responses' costs read.
struct alignas(64) CostCounters {
  LoopCounter charged;
  std::array<LoopCounter, kCostReadingNames.size()> readings;
  void read(CostReading reading) noexcept { readings[static_cast<std::size_t>(reading)].add(); }
};

/// Fetches sluice makes for itself, per name: those that succeeded, and those that failed.
using FetchCounts = std::map<std::string, std::array<std::uint64_t, 2>, std::less<>>;

/// The process's metrics, exposed on the admin port in Prometheus' text format.
///
/// Routes and upstreams are registered by name when a configuration is loaded (under a lock);
/// the request path then writes its own loop's counters through pointers resolved at load time,
/// so it takes no lock and shares no cache line with another loop. A series belongs to its name,
/// so it survives reloads.
class Metrics {
 public:
  explicit Metrics(std::size_t loops) : loops_(loops), rls_(loops) {}

  std::size_t loops() const noexcept { return loops_; }
  /// The counters of route `name` (`""`: requests that matched none), one per loop.
  std::vector<RouteCounters*> route(std::string_view name);
  /// The failure counters of the upstream `url`, one per loop.
  std::vector<UpstreamCounters*> upstream(std::string_view url);
  /// The verification counters of the JWT provider `name`, one per loop.
  std::vector<JwtCounters*> jwt(std::string_view name);
  /// The after-response charges of the limiter `name`, one per loop.
  std::vector<CostCounters*> cost(std::string_view name);
  /// A fetch of a provider's JWK Set (start, refresh or an unknown `kid`): off the request path.
  void count_jwks_refresh(std::string_view provider, bool succeeded);
  /// A fetch of a listener certificate's OCSP response (named by its file): off the request path.
  void count_ocsp_fetch(std::string_view certificate, bool succeeded);
  void count_reload(bool succeeded) noexcept;
  /// A write on the admin port: rare, one atomic shared by the loops.
  void count_admin_write(AdminAction action, AdminResult result) noexcept {
    admin_writes_[static_cast<std::size_t>(action)][static_cast<std::size_t>(result)].fetch_add(
        1, std::memory_order_relaxed);
  }
  /// Loop `loop`'s Envoy rate-limit calls.
  RlsCounters& rls(std::size_t loop) noexcept { return rls_[loop]; }
  /// A TLS listener's handshake: a new session, a resumed one (a session ticket), or a failure
  /// (the connection closed). Off the request path: one atomic shared by the loops.
  enum class Handshake { full, resumed, failed };
  void count_tls_handshake(Handshake outcome) noexcept {
    tls_handshakes_[static_cast<std::size_t>(outcome)].fetch_add(1, std::memory_order_relaxed);
  }

  /// An HTTP/2 client connection began (after its preface, or ALPN h2).
  void count_http2_connection() noexcept {
    http2_connections_.fetch_add(1, std::memory_order_relaxed);
  }
  /// The proxy ended an HTTP/2 client connection with GOAWAY and this error code (RFC 9113 §7;
  /// NO_ERROR for a drain): floods, rapid resets and protocol errors show here.
  void count_http2_goaway(std::uint32_t error_code) noexcept {
    http2_goaways_[std::min<std::size_t>(error_code, kHttp2ErrorCodes - 1)].fetch_add(
        1, std::memory_order_relaxed);
  }

  /// A streaming request's body the proxy rewrote to ask for its usage (a route's
  /// `cost_from.include_usage`, SPEC §9): one atomic shared by the loops, on those requests only.
  void count_usage_requested() noexcept {
    usage_requested_.fetch_add(1, std::memory_order_relaxed);
  }

  /// Gauges read at scrape time.
  struct Gauges {
    std::span<const std::pair<std::string_view, std::uint64_t>> limiter_keys;
    std::size_t open_connections = 0;
    std::size_t parked_connections = 0;
    std::uint64_t access_log_dropped = 0;  ///< Lines the access log's full queue dropped.
    std::string_view store = "memory";
    std::uint64_t store_errors = 0;
    bool store_available = true;
    std::uint64_t store_cached_refusals = 0;
    std::uint64_t store_calls = 0;
    std::uint64_t store_requests_in_calls = 0;
    std::uint64_t store_refunds = 0;
    std::uint64_t store_lost_settlements = 0;
    std::uint64_t store_lease_hits = 0;
    std::uint64_t store_lease_holders = 0;  ///< 0: not counted (no lease yet).
    /// Per leased limiter, the most its keys can be overshot: lease × lease holders.
    std::span<const std::pair<std::string_view, std::uint64_t>> lease_bounds = {};
  };
  /// The exposition: requests, durations, upstream errors, limiter keys, store errors, reloads.
  std::string render(const Gauges& gauges) const;

  /// Each route's requests so far by decision, summed over the loops: what the traffic
  /// history samples (telemetry/traffic_history.hpp).
  std::vector<std::pair<std::string, std::array<std::uint64_t, kMetricDecisions>>> route_totals()
      const;
  /// The counts the operators' page shows beside the routes', summed over the loops.
  struct Totals {
    /// Per upstream, its failures by UpstreamErrorKind.
    std::vector<std::pair<std::string, std::array<std::uint64_t, kUpstreamErrorKinds>>>
        upstream_errors;
    /// Per JWT provider, its key set's fetches that succeeded, and that failed.
    std::vector<std::pair<std::string, std::array<std::uint64_t, 2>>> jwks_refreshes;
    std::array<std::uint64_t, 2> reloads{};         ///< Succeeded, failed.
    std::array<std::uint64_t, 3> tls_handshakes{};  ///< By Handshake.
    std::uint64_t http2_connections = 0;
    std::uint64_t http2_goaways = 0;  ///< Of any error code.
  };
  Totals totals() const;

 private:
  template <class Counters>
  using Family = std::deque<std::pair<std::string, std::vector<std::unique_ptr<Counters>>>>;
  template <class Counters>
  std::vector<Counters*> series(Family<Counters>& family, std::string_view name);

  std::size_t loops_;
  mutable std::mutex mutex_;  ///< Registration and scrape only.
  Family<RouteCounters> routes_;
  Family<UpstreamCounters> upstreams_;
  Family<JwtCounters> jwt_providers_;
  Family<CostCounters> costs_;
  FetchCounts jwks_refreshes_;  ///< By JWT provider.
  FetchCounts ocsp_fetches_;    ///< By certificate file.
  std::atomic<std::uint64_t> reloads_succeeded_{0};
  std::atomic<std::uint64_t> reloads_failed_{0};
  std::array<std::array<std::atomic<std::uint64_t>, kAdminResultNames.size()>,
             kAdminActionNames.size()>
      admin_writes_{};
  std::array<std::atomic<std::uint64_t>, 3> tls_handshakes_{};  ///< By Handshake.
  /// HTTP/2's error codes, NO_ERROR (0) to HTTP_1_1_REQUIRED (13); the last counts any later one.
  static constexpr std::size_t kHttp2ErrorCodes = 15;
  std::atomic<std::uint64_t> http2_connections_{0};
  std::atomic<std::uint64_t> usage_requested_{0};
  std::array<std::atomic<std::uint64_t>, kHttp2ErrorCodes> http2_goaways_{};  ///< By code.
  std::vector<RlsCounters> rls_;                                              ///< One per loop.
};

}  // namespace sluice::telemetry
