#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "config/load_config.hpp"

namespace sluice::fuzz {

// Project symbols this header uses (one place to re-qualify them).
using ::sluice::config::parse_config;
using ::sluice::config::ProxyConfig;

/// The configuration the request and replay targets decide with. It has a part of the pipeline
/// for every kind of input: trusted proxies (IPv4, IPv6, one address), deny networks, bans,
/// routes by exact path, prefix, regex, method, host and header conditions, keys from every
/// source (address with an IPv6 prefix, header, bearer token, cookie, query parameter,
/// composites, global), an override, shadow and delay modes, a concurrency limiter, and every
/// algorithm. Limits are small so that a few requests reach limited, delayed and banned.
inline constexpr std::string_view kFuzzConfig = R"(
upstream: http://127.0.0.1:9000
trusted_proxies: ["10.0.0.0/8", "fd00::/8", "127.0.0.1"]
deny: ["203.0.113.0/24", "2001:db8:bad::/48"]
ban: {after: 2, within: 1m, for: 10m}
store: {type: memory, max_keys: 1000}
limiters:
  per-ip: {algorithm: fixed_window, limit: 2, window: 1m, ipv6_prefix: 64}
  api-key:
    algorithm: token_bucket
    rate: 1/s
    burst: 1
    key: "header:X-Api-Key"
    overrides: {"premium": {rate: 10/s, burst: 5}}
  bearer: {algorithm: sliding_window, limit: 1, window: 10s, key: bearer}
  session: {algorithm: sliding_log, limit: 2, window: 10s, key: "cookie:session"}
  tenant: {algorithm: concurrency, limit: 1, key: "query:tenant"}
  user:
    algorithm: leaky_bucket
    rate: 1/s
    burst: 1
    key: "ip+header:X-User+route"
    mode: delay
    max_delay: 2s
  warm: {algorithm: token_bucket, rate: 5/s, warmup: 10s, cold_factor: 3, key: "header:X-Client"}
  wheel: {algorithm: wheel, limit: 3, window: 1m, slots: 6, key: global, shadow: true}
routes:
  - {name: status, match: {path: /status, methods: [GET, HEAD]}, respond: {status: 200, body: "ok\n"}}
  - name: users
    match: {path_regex: "^/v[0-9]+/users/[^/]+$", host: api.example.com}
    limiters: [per-ip, bearer, user]
  - name: admin
    match:
      path_prefix: /admin/
      headers: [{name: X-Admin, value: "yes"}, {name: X-Debug, present: false}]
    limiters: [per-ip, session]
  - name: api
    match: {path_prefix: /api/, methods: [GET, POST, PUT, DELETE]}
    limiters: [per-ip, api-key, tenant, warm, wheel]
  - {name: upload, match: {path: /upload}, limiters: [per-ip], cost: 2}
  - {name: default, match: {path_prefix: /}, limiters: [per-ip, wheel]}
)";

/// kFuzzConfig, read once. No environment: the text names no variable.
inline const ProxyConfig& fuzz_config() {
  static const ProxyConfig config =
      parse_config(kFuzzConfig, "fuzz.yaml",
                   [](std::string_view) -> std::optional<std::string> { return std::nullopt; });
  return config;
}

}  // namespace sluice::fuzz
