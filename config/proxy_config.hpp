#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "config/cidr.hpp"
#include "config/diagnostics.hpp"
#include "limiter/limiter_options.hpp"

namespace sluice::config {

using limiter::Duration;

/// `host:port`; `[::]:8080` for IPv6.
struct HostPort {
  std::string host;
  std::uint16_t port = 0;

  bool operator==(const HostPort&) const = default;
};

enum class TlsVersion { v1_2, v1_3 };
/// Whether a TLS listener asks clients for a certificate, and what it does without one.
enum class ClientCertificates { none, optional, require };

/// A listener's `tls` (SPEC §7): paths as written. The files are read where the proxy builds
/// its TLS contexts (proxy/tls/), at start, `sluice check` and every reload; their problems are
/// reported where the file is named, under `path`.
struct ListenerTls {
  std::string cert;  ///< PEM: the certificate, then its chain.
  std::string key;   ///< PEM.
  TlsVersion min_version = TlsVersion::v1_2;
  std::string client_ca;  ///< Empty: clients are not asked for certificates.
  ClientCertificates client_cert = ClientCertificates::none;
  /// TLS 1.2's cipher suites and the key exchange groups, as OpenSSL lists them; empty: Mozilla's
  /// "intermediate" profile (proxy/tls/contexts.cpp).
  std::string ciphers;
  std::string curves;
  /// A DER OCSP response for `cert`, stapled to handshakes (proxy/tls/ocsp_staple.hpp); empty:
  /// none.
  std::string ocsp;
  /// Without `ocsp`: fetch the response to staple from the responder the certificate names.
  bool ocsp_fetch = true;
  std::string path;  ///< "tls" or "listen[1].tls", for messages.
  Location cert_at, key_at, client_ca_at, ciphers_at, curves_at, ocsp_at;  ///< Where each is.

  bool operator==(const ListenerTls&) const = default;
};

/// One address the proxy accepts connections on, in cleartext or TLS.
struct Listener {
  HostPort address;
  std::optional<ListenerTls> tls;

  bool operator==(const Listener&) const = default;
};

/// How `https://` upstreams are verified, and the certificate sluice shows them (`upstream_tls`).
struct UpstreamTls {
  std::string ca;  ///< PEM bundle; empty: the system's.
  bool verify = true;
  std::string server_name;  ///< SNI and the name checked; empty: the upstream URL's host.
  std::string cert;         ///< Client certificate (PEM), with `key`; empty: none.
  std::string key;
  Location ca_at, cert_at, key_at;  ///< Where the file names are written.
};

/// `http://host[:port]` or `https://host[:port]`: an upstream that speaks HTTP/1.1, in cleartext
/// or TLS; `h2c://` or `h2://`: one that speaks HTTP/2 (gRPC servers), multiplexed.
struct Upstream {
  std::string url;
  std::string host;
  std::uint16_t port = 80;
  bool tls = false;    ///< https:// or h2://
  bool http2 = false;  ///< h2c:// (cleartext, prior knowledge) or h2:// (TLS, ALPN h2)
};

struct Timeouts {
  Duration header = std::chrono::seconds(10);
  Duration idle = std::chrono::seconds(60);
  Duration connect = std::chrono::seconds(2);
  Duration upstream = std::chrono::seconds(30);
  Duration drain = std::chrono::seconds(10);
};

/// `http2` (SPEC §7): HTTP/2 for clients, by ALPN on TLS listeners and by its connection
/// preface (prior knowledge) on cleartext ones, beside HTTP/1.1 on the same ports.
struct Http2Options {
  bool enabled = true;
  /// SETTINGS_MAX_CONCURRENT_STREAMS: streams one connection may have open; more are refused
  /// (RST_STREAM REFUSED_STREAM) and the client retries them. nginx's and Envoy's default is 128
  /// and 100.
  std::uint32_t max_concurrent_streams = 128;
};

enum class LimitsHeaders { draft, legacy, both, none };
enum class LogFormat { text, json };
enum class StoreType { memory, redis };
enum class OnStoreError { allow, deny, local };

/// `on_error` as the config spells it.
constexpr std::string_view name_of(OnStoreError policy) noexcept {
  switch (policy) {
    case OnStoreError::allow:
      return "allow";
    case OnStoreError::deny:
      return "deny";
    case OnStoreError::local:
      return "local";
  }
  return "allow";
}

struct LogOptions {
  std::string level = "info";
  LogFormat format = LogFormat::text;
  bool access = true;
};

/// Where Redis is and how to log in: `redis://[[user]:password@]host[:port][/db]`, the user
/// and password percent-decoded.
struct RedisEndpoint {
  std::string host = "127.0.0.1";
  std::uint16_t port = 6379;
  std::string user;      ///< Empty: the default user (AUTH with the password only).
  std::string password;  ///< Empty, and no user: no AUTH.
  unsigned db = 0;       ///< SELECT'ed when not 0.

  bool operator==(const RedisEndpoint&) const = default;
};

struct RedisOptions {
  std::string url = "redis://127.0.0.1:6379/0";
  RedisEndpoint endpoint;  ///< `url`, parsed.
  std::string prefix = "sluice:";
  Duration timeout = std::chrono::milliseconds(20);
  unsigned pool = 4;
  OnStoreError on_error = OnStoreError::allow;
  /// Redis Cluster: `url` is a seed node; the masters and their slots are discovered.
  bool cluster = false;

  bool operator==(const RedisOptions&) const = default;
};

struct StoreOptions {
  StoreType type = StoreType::memory;
  std::uint64_t max_keys = 1'000'000;
  RedisOptions redis;
};

/// One part of a limiter key (SPEC §2 "Common limiter keys").
struct KeyPart {
  enum class Kind {
    ip,
    header,
    bearer,
    cookie,
    query,
    route,
    global,
    cert_subject,      ///< The client certificate's subject (RFC 2253).
    cert_san,          ///< Its first DNS or URI subject alternative name.
    cert_fingerprint,  ///< Its SHA-256, in hex.
    jwt,               ///< A claim of the route's verified token (`name` is its dotted path).
  };
  Kind kind = Kind::ip;
  std::string name;  ///< The header, cookie or query parameter.

  /// Secret-bearing parts are hashed before they are logged or stored. A query parameter
  /// counts as one: it is where API keys travel when they are not in a header.
  bool secret() const noexcept {
    return kind == Kind::header || kind == Kind::bearer || kind == Kind::cookie ||
           kind == Kind::query;
  }
};

struct KeySpec {
  std::string text;  ///< As written: "ip+header:X-User".
  std::vector<KeyPart> parts;

  /// Whether a part reads a verified token's claim.
  bool reads_claims() const noexcept {
    for (const KeyPart& part : parts) {
      if (part.kind == KeyPart::Kind::jwt) {
        return true;
      }
    }
    return false;
  }
};

/// One key a JWT provider verifies with (`keys`): a PEM public key file or an HMAC secret, for
/// one algorithm.
struct JwtKeyConfig {
  std::string file;  ///< PEM (SubjectPublicKeyInfo); empty: `secret`.
  std::string secret;
  std::string algorithm;  ///< A JWS name: RS256, ES256, HS256, ...
  Location at;            ///< Where the key is written (its file's problems are reported there).
};

/// An `auth.jwt` provider (SPEC §8): who issues the tokens, what is accepted, where its keys
/// are, where a request carries its token, and which claims go upstream.
struct JwtProviderConfig {
  std::string name;
  std::string issuer;                   ///< `iss` must equal it.
  std::vector<std::string> audiences;   ///< Empty: any `aud`.
  std::vector<std::string> algorithms;  ///< The allow-list, JWS names.
  std::string jwks_url;                 ///< https:// (http:// on loopback); empty: none.
  Duration jwks_refresh = std::chrono::minutes(10);
  std::string jwks_file;  ///< Empty: none.
  std::vector<JwtKeyConfig> keys;
  /// Where a request's token is read, first found wins: bearer, cookie:NAME, header:NAME or
  /// query:NAME.
  std::vector<KeyPart> from{KeyPart{KeyPart::Kind::bearer, ""}};
  Duration leeway = std::chrono::seconds(60);
  /// A claim's dotted path → the request header its verified value is sent upstream in.
  std::vector<std::pair<std::string, std::string>> claims_to_headers;
  Location at, jwks_at;
};

/// A route's `auth`: the provider that verifies its requests' tokens.
struct RouteAuth {
  std::string provider;
  /// A request without a token gets 401; false lets it through anonymous (its `jwt:` limiters
  /// skipped). A token that does not verify gets 401 either way.
  bool required = true;
};

/// Other parameters for one key value (`overrides: {"premium-key": {limit: 1000}}`).
struct Override {
  std::string value;
  limiter::LimiterOptions options;
};

struct LimiterConfig {
  std::string name;
  limiter::LimiterOptions options;  ///< Algorithm, parameters, mode, max_delay, max_keys.
  KeySpec key;
  unsigned ipv6_prefix = 128;  ///< IPv6 clients are grouped by this prefix.
  bool shadow = false;         ///< Computed and counted, never enforced.
  unsigned status = 429;       ///< Status of a limited request.
  /// With the Redis store: permits a replica takes from Redis at once and then grants without a
  /// round trip (0: every request decided in Redis). See docs/operations.md, "Leases".
  std::uint64_t lease = 0;
  std::vector<Override> overrides;
  /// `tier`: the key whose value chooses the parameters (`jwt:plan`); `tiers`: those values'
  /// parameters. A key with an override has the override's; one whose tier is not listed, or
  /// whose tier key cannot be formed, has the limiter's own (SPEC §8).
  std::optional<KeySpec> tier;
  std::vector<Override> tiers;
  /// `cost: response`: a request is admitted while the key's budget is above zero (or above the
  /// route's estimate) and charged what its response says it cost, once the response is over
  /// (the route's `cost_from`, SPEC §9).
  bool cost_from_response = false;
  /// `count_if: {status: [...]}`: only responses with one of these statuses are charged.
  std::vector<unsigned> count_if_status;
  Location at;
  bool valid = false;  ///< Read without problems (a config with problems is never returned).

  /// Whether requests are charged once their response is over rather than at admission.
  bool settled_later() const noexcept { return cost_from_response || !count_if_status.empty(); }
};

struct HeaderCondition {
  std::string name;
  std::optional<std::string> value;  ///< nullopt: only `present` is checked.
  bool present = true;
};

struct RouteMatch {
  enum class Path { any, exact, prefix, regex };
  Path path_kind = Path::any;
  std::string path;
  std::vector<std::string> methods;  ///< Empty: any method.
  std::optional<std::string> host;
  std::vector<HeaderCondition> headers;
};

struct Respond {
  unsigned status = 200;
  std::string body;
};

/// Where a route's responses say what they cost (`cost_from`, SPEC §9).
struct CostFrom {
  enum class Source : std::uint8_t { usage, header, json, bytes };
  enum class Usage : std::uint8_t { openai, anthropic };
  enum class Count : std::uint8_t { total, input, output };
  Source source = Source::usage;
  Usage usage = Usage::openai;  ///< Source::usage: whose format.
  Count count = Count::total;   ///< Source::usage: which tokens.
  std::string field;            ///< Source::header: its name; Source::json: the dotted path.
  /// Reserved at admission and corrected when the response ends; also the charge of a response
  /// that never said (cut short, or no usable value).
  limiter::Permits estimate = 0;
  bool include_usage = false;  ///< openai: streaming requests ask for the usage chunk.
};

struct Route {
  std::string name;
  RouteMatch match;
  std::optional<Upstream> upstream;   ///< nullopt: the top-level upstream.
  std::vector<std::string> limiters;  ///< Names, in the order written.
  limiter::Permits cost = 1;
  std::optional<Respond> respond;  ///< Answered by the proxy itself.
  std::optional<RouteAuth> auth;   ///< Verifies its requests' tokens (SPEC §8).
  std::optional<CostFrom> cost_from;
  Location at;
};

/// One entry an `rls` descriptor rule asks for (SPEC §11): its key, and the value it must have
/// (nullopt: any value).
struct RlsEntry {
  std::string key;
  std::optional<std::string> value;

  bool operator==(const RlsEntry&) const = default;
};

/// A descriptor rule of an `rls` domain: a descriptor whose entries are exactly `entries`, in
/// order, is decided by `limiter`, its key being the entries' values joined with '+' (as a
/// composite key's parts are). A descriptor that several rules match takes the most specific,
/// entry by entry from the first (a value beats any value), then the first written.
struct RlsRule {
  std::vector<RlsEntry> entries;
  std::string limiter;  ///< Empty: unlimited (envoyproxy/ratelimit's `unlimited`): always OK.
  /// envoyproxy/ratelimit's `rate_limit.name`, and the names of the rules this one `replaces`:
  /// when a request's descriptors match both, the replaced one is not applied.
  std::string name;
  std::vector<std::string> replaces;
  Location at;
};

/// One domain of Envoy's rate-limit service API (`rls`, SPEC §11), written in proxy.yaml or read
/// from an envoyproxy/ratelimit configuration file (`envoy_config`), whose limits become
/// limiters of their own.
struct RlsDomain {
  std::string domain;
  std::vector<RlsRule> rules;
  std::string file;  ///< The envoyproxy/ratelimit file it came from; empty: proxy.yaml.
  Location at;
};

struct BanOptions {
  std::uint32_t after = 0;
  Duration within{};
  Duration duration{};  ///< `for` in the file.
};

/// The validated configuration (SPEC §2). Plain values only: the state of limiters lives in the
/// pipeline that is built from it.
struct ProxyConfig {
  std::string file;
  /// At least one; `listen` with `tls`, or a list of them.
  std::vector<Listener> listeners{Listener{.address = {"0.0.0.0", 8080}, .tls = std::nullopt}};
  std::optional<HostPort> admin = HostPort{"127.0.0.1", 9901};  ///< nullopt: disabled.
  /// `decide` (SPEC §11): the decision service's listener (forward auth, Envoy's rate-limit
  /// service); nullopt: none.
  std::optional<Listener> decide;
  /// `admin_token` (SPEC §10): the bearer token the admin port's writes need. Empty: none, and
  /// writes are accepted only on a loopback admin address.
  std::string admin_token;
  unsigned threads = 0;  ///< 0: one per core.
  /// Client connections open at once, over all threads; beyond it new ones wait in the listen
  /// queue until one closes (HAProxy's `maxconn`).
  std::size_t max_connections = 10000;
  /// `watch`: the file, and the certificate, key and JWKS files it names, are reloaded when they
  /// change on disk (SPEC §10). Applies at the reload that reads it.
  bool watch = false;
  /// Keys each limiter's heaviest-keys summary keeps per event loop and ten seconds (GET /top,
  /// SPEC §10); 0 turns the tracking off.
  std::size_t top_keys = 64;
  std::optional<Upstream> upstream;
  UpstreamTls upstream_tls;  ///< For every https:// upstream.
  Http2Options http2;
  std::vector<Cidr> trusted_proxies;
  Timeouts timeouts;
  LimitsHeaders limits_headers = LimitsHeaders::both;
  LogOptions log;
  StoreOptions store;
  std::vector<JwtProviderConfig> jwt_providers;  ///< `auth.jwt`, in the order written.
  std::vector<LimiterConfig> limiters;
  std::vector<Cidr> deny;
  std::optional<BanOptions> ban;
  std::vector<Route> routes;
  std::vector<RlsDomain> rls;  ///< Served on the decide listener.

  const LimiterConfig* limiter_named(std::string_view name) const noexcept {
    for (const LimiterConfig& limiter : limiters) {
      if (limiter.name == name) {
        return &limiter;
      }
    }
    return nullptr;
  }
  const JwtProviderConfig* jwt_provider_named(std::string_view name) const noexcept {
    for (const JwtProviderConfig& provider : jwt_providers) {
      if (provider.name == name) {
        return &provider;
      }
    }
    return nullptr;
  }
};

}  // namespace sluice::config
