#include "tests/config/broken_configs.hpp"

namespace sluice::test {

const std::vector<BrokenConfig>& broken_configs() {
  static const std::vector<BrokenConfig> table{
      {"not_yaml",
       "routes: [ {name: a",
       {"proxy.yaml:1:1: not valid YAML: end of map flow not found"}},
      {"unknown_top_key",
       "upstream: \"http://127.0.0.1:9000\"\nlistn: \":8080\"\nroutes: [{name: a}]",
       {"proxy.yaml:2:1: unknown key \"listn\" (did you mean \"listen\"?); accepted keys: listen, "
        "tls, admin, admin_token, threads, max_connections, upstream, upstream_tls, http2, "
        "trusted_proxies, "
        "timeouts, "
        "limits_headers, log, store, auth, limiters, deny, ban, routes, watch, top_keys, decide or "
        "rls"}},
      {"unknown_nested_key",
       "upstream: \"http://127.0.0.1:9000\"\ntimeouts: {idel: 5s}\nroutes: [{name: a}]",
       {"proxy.yaml:2:12: timeouts: unknown key \"idel\" (did you mean \"idle\"?); accepted keys: "
        "header, idle, connect, upstream or drain"}},
      {"duplicate_key",
       "upstream: \"http://127.0.0.1:9000\"\nthreads: 2\nthreads: 3\nroutes: [{name: a}]",
       {"proxy.yaml:3:1: threads: duplicate key (first at line 2)"}},
      {"missing_routes",
       "upstream: \"http://127.0.0.1:9000\"",
       {"proxy.yaml:1:1: routes: missing"}},
      {"empty_file", "", {"proxy.yaml:1:1: the file is empty; it needs at least routes"}},
      {"empty_routes",
       "upstream: \"http://127.0.0.1:9000\"\nroutes: []",
       {"proxy.yaml:2:9: routes: no route: every request would get 404"}},
      {"bad_listen",
       "listen: \"8080\"\nupstream: \"http://127.0.0.1:9000\"\nroutes: [{name: a}]",
       {"proxy.yaml:1:9: listen: \"8080\" is not host:port (0.0.0.0:8080, [::]:8080)"}},
      {"bad_upstream",
       "upstream: \"ftp://example.com\"\nroutes: [{name: a}]",
       {"proxy.yaml:1:11: upstream: \"ftp://example.com\" is not an http://, https://, "
        "h2c:// or h2:// URL"}},
      {"upstream_with_path",
       "upstream: \"http://127.0.0.1:9000/api\"\nroutes: [{name: a}]",
       {"proxy.yaml:1:11: upstream: \"http://127.0.0.1:9000/api\" must be http[s]://host[:port], "
        "without a path"}},
      {"upstream_with_credentials",
       "upstream: \"http://admin:hunter2@127.0.0.1:9000\"\nroutes: [{name: a}]",
       {"proxy.yaml:1:11: upstream: \"http://admin:***@127.0.0.1:9000\" must be "
        "http[s]://host[:port], without a user or password"}},
      {"route_upstream_malformed",
       "upstream: \"http://127.0.0.1:9000\"\nroutes:\n  - {name: a, match: {path: /a}, upstream: "
       "\"http://127.0.0.1:90000\"}\n  - {name: b, match: {path: /b}, upstream: \"http://back "
       "end\"}",
       {"proxy.yaml:3:44: routes[0].upstream: \"http://127.0.0.1:90000\" has a port that is not a "
        "number from 1 to 65535",
        "proxy.yaml:4:44: routes[1].upstream: \"http://back end\" is not a valid URL (RFC 3986)"}},
      {"redis_url_malformed",
       "upstream: \"http://127.0.0.1:9000\"\nstore:\n  type: redis\n  redis:\n    url: "
       "\"redis://app:s3cr@t/x@cache:6380/3\"\nroutes: [{name: a}]",
       {"proxy.yaml:5:10: store.redis.url: \"redis://***@cache:6380\" is not a valid URL (RFC "
        "3986); percent-encode / ? # % in the user and password as %2F %3F %23 %25 "
        "(redis://[[user]:password@]host[:port][/db])"}},
      {"redis_url_bad_database",
       "upstream: \"http://127.0.0.1:9000\"\nstore: {type: redis, redis: {url: "
       "\"redis://:hunter2@cache/db1\"}}\nroutes: [{name: a}]",
       {"proxy.yaml:2:35: store.redis.url: \"redis://:***@cache/db1\" has a database that is not "
        "a whole number (redis://[[user]:password@]host[:port][/db])"}},
      {"redis_cluster_database",
       "upstream: \"http://127.0.0.1:9000\"\nstore: {type: redis, redis: {url: "
       "\"redis://cache:6379/2\", cluster: true}}\nroutes: [{name: a}]",
       {"proxy.yaml:2:35: store.redis.url: a Redis Cluster has only database 0"}},
      {"lease_where_it_cannot_work",
       "upstream: \"http://127.0.0.1:9000\"\nlimiters:\n"
       "  a: {algorithm: concurrency, limit: 3, lease: 1}\n"
       "  b: {algorithm: token_bucket, rate: 1/s, warmup: 1m, lease: 2}\n"
       "  c: {algorithm: fixed_window, limit: 5, window: 1s, mode: delay, lease: 2}\n"
       "  d: {algorithm: sliding_log, limit: 5, window: 1s, lease: 6}\n"
       "  e: {algorithm: fixed_window, limit: 5, window: 1s, lease: 0}\n"
       "routes: [{name: a}]",
       {"proxy.yaml:3:48: limiters.a.lease: does not apply to concurrency: its permits come back "
        "one by one",
        "proxy.yaml:4:62: limiters.b.lease: does not apply with warmup: the cost of a permit "
        "depends on its time",
        "proxy.yaml:5:74: limiters.c.lease: applies in reject mode only: a delayed request needs "
        "its own time",
        "proxy.yaml:6:60: limiters.d.lease: is more than the limit (5)",
        "proxy.yaml:7:61: limiters.e.lease: \"0\" is not a whole number from 1 to 1000000000"}},
      {"bad_max_connections",
       "upstream: \"http://127.0.0.1:9000\"\nmax_connections: 0\nroutes: [{name: a}]",
       {"proxy.yaml:2:18: max_connections: \"0\" is not a whole number from 1 to 10000000"}},
      {"bad_watch",
       "upstream: \"http://127.0.0.1:9000\"\nwatch: yes\nroutes: [{name: a}]",
       {"proxy.yaml:2:8: watch: \"yes\" is not one of true or false"}},
      {"bad_top_keys",
       "upstream: \"http://127.0.0.1:9000\"\ntop_keys: 5000\nroutes: [{name: a}]",
       {"proxy.yaml:2:11: top_keys: \"5000\" is not a whole number from 0 to 1024"}},
      {"bad_threads",
       "upstream: \"http://127.0.0.1:9000\"\nthreads: -1\nroutes: [{name: a}]",
       {"proxy.yaml:2:10: threads: \"-1\" is not a whole number from 0 to 1024"}},
      {"bad_duration",
       "upstream: \"http://127.0.0.1:9000\"\ntimeouts: {drain: 10 s}\nroutes: [{name: a}]",
       {"proxy.yaml:2:19: timeouts.drain: \"10 s\" is not a duration; use a number and ms, s, m, h "
        "or d (250ms, 10s)"}},
      {"zero_timeout",
       "upstream: \"http://127.0.0.1:9000\"\ntimeouts: {connect: 0}\nroutes: [{name: a}]",
       {"proxy.yaml:2:21: timeouts.connect: must be positive"}},
      {"bad_choice",
       "upstream: \"http://127.0.0.1:9000\"\nlimits_headers: legacyy\nlog: {format: xml}\nroutes: "
       "[{name: a}]",
       {"proxy.yaml:2:17: limits_headers: \"legacyy\" is not one of draft, legacy, both or none "
        "(did you mean \"legacy\"?)",
        "proxy.yaml:3:15: log.format: \"xml\" is not one of text or json"}},
      {"bad_cidr",
       "upstream: \"http://127.0.0.1:9000\"\ndeny: [\"203.0.113.0/24\", \"203.0.113.0/40\", "
       "\"2001:db8::/129\"]\nroutes: [{name: a}]",
       {"proxy.yaml:2:26: deny: \"203.0.113.0/40\" is not an IPv4 or IPv6 network (10.0.0.0/8, "
        "2001:db8::/32)",
        "proxy.yaml:2:44: deny: \"2001:db8::/129\" is not an IPv4 or IPv6 network (10.0.0.0/8, "
        "2001:db8::/32)"}},
      {"bad_store",
       "upstream: \"http://127.0.0.1:9000\"\nstore: {type: memcached, max_keys: 0, redis: {url: "
       "\"localhost:6379\", pool: 0, on_error: retry}}\nroutes: [{name: a}]",
       {"proxy.yaml:2:15: store.type: \"memcached\" is not one of memory or redis",
        "proxy.yaml:2:36: store.max_keys: \"0\" is not a whole number from 1 to 1000000000",
        "proxy.yaml:2:52: store.redis.url: \"localhost:6379\" is not a redis:// URL "
        "(redis://[[user]:password@]host[:port][/db])",
        "proxy.yaml:2:76: store.redis.pool: \"0\" is not a whole number from 1 to 64",
        "proxy.yaml:2:89: store.redis.on_error: \"retry\" is not one of allow, deny or local"}},
      {"incomplete_ban",
       "upstream: \"http://127.0.0.1:9000\"\nban: {after: 20, within: 1m}\nroutes: [{name: a}]",
       {"proxy.yaml:2:6: ban.for: missing"}},
      {"unset_variable",
       "upstream: \"${SLUICE_UPSTREAM}\"\nroutes: [{name: a}]",
       {"proxy.yaml:1:11: upstream: environment variable SLUICE_UPSTREAM is not set (give a "
        "default with ${SLUICE_UPSTREAM:-value})"}},
      {"unknown_algorithm",
       "upstream: \"http://127.0.0.1:9000\"\nlimiters:\n  per-ip: {algorithm: sliding-window, "
       "limit: 10, window: 1m}\nroutes: [{name: a}]",
       {"proxy.yaml:3:23: limiters.per-ip.algorithm: \"sliding-window\" is not one of "
        "fixed_window, sliding_log, sliding_window, wheel, token_bucket, leaky_bucket or "
        "concurrency (did you mean \"sliding_window\"?)"}},
      {"missing_algorithm",
       "upstream: \"http://127.0.0.1:9000\"\nlimiters:\n  per-ip: {limit: 10, window: 1m}\nroutes: "
       "[{name: a}]",
       {"proxy.yaml:3:11: limiters.per-ip.algorithm: missing"}},
      {"missing_parameters",
       "upstream: \"http://127.0.0.1:9000\"\nlimiters:\n  per-ip: {algorithm: sliding_window}\n  "
       "bucket: {algorithm: token_bucket, burst: 5}\nroutes: [{name: a}]",
       {"proxy.yaml:3:11: limiters.per-ip.limit: missing (sliding_window needs limit and window)",
        "proxy.yaml:3:11: limiters.per-ip.window: missing (sliding_window needs limit and window)",
        "proxy.yaml:4:11: limiters.bucket.rate: missing (token_bucket needs rate)"}},
      {"foreign_parameter",
       "upstream: \"http://127.0.0.1:9000\"\nlimiters:\n  bucket: {algorithm: token_bucket, rate: "
       "10/s, window: 1m}\nroutes: [{name: a}]",
       {"proxy.yaml:3:57: limiters.bucket.window: does not apply to token_bucket (its parameters: "
        "rate, burst, warmup and cold_factor)"}},
      {"zero_limit",
       "upstream: \"http://127.0.0.1:9000\"\nlimiters:\n  per-ip: {algorithm: fixed_window, limit: "
       "0, window: 1m}\nroutes: [{name: a}]",
       {"proxy.yaml:3:44: limiters.per-ip.limit: \"0\" is not a whole number from 1 to "
        "4294967295"}},
      {"zero_window",
       "upstream: \"http://127.0.0.1:9000\"\nlimiters:\n  per-ip: {algorithm: fixed_window, limit: "
       "10, window: 0}\nroutes: [{name: a}]",
       {"proxy.yaml:3:56: limiters.per-ip.window: window must be positive, got 0ns"}},
      {"bad_rate",
       "upstream: \"http://127.0.0.1:9000\"\nlimiters:\n  bucket: {algorithm: token_bucket, rate: "
       "10 per second}\nroutes: [{name: a}]",
       {"proxy.yaml:3:43: limiters.bucket.rate: \"10 per second\" is not a rate; use N/s, N/m, "
        "N/h, N/d or N/<duration> (10/s, 5/200ms)"}},
      {"zero_burst",
       "upstream: \"http://127.0.0.1:9000\"\nlimiters:\n  bucket: {algorithm: token_bucket, rate: "
       "10/s, burst: 0}\nroutes: [{name: a}]",
       {"proxy.yaml:3:56: limiters.bucket.burst: burst must be at least 1, got 0"}},
      {"burst_with_warmup",
       "upstream: \"http://127.0.0.1:9000\"\nlimiters:\n  warm: {algorithm: token_bucket, rate: "
       "2/s, "
       "warmup: 4s, burst: 10}\n  cold: {algorithm: token_bucket, rate: 2/s, cold_factor: "
       "3}\nroutes: "
       "[{name: a}]",
       {"proxy.yaml:3:65: limiters.warm.burst: does not apply with warmup (Guava's warm-up sets "
        "its "
        "own maximum of stored permits)",
        "proxy.yaml:4:59: limiters.cold.cold_factor: applies only with warmup"}},
      {"wheel_slots",
       "upstream: \"http://127.0.0.1:9000\"\nlimiters:\n  wheel: {algorithm: wheel, limit: 10, "
       "window: 1s, slots: 3}\nroutes: [{name: a}]",
       {"proxy.yaml:3:48: limiters.wheel.window: window must be a whole number of slots, got "
        "window 1s for 3 slots"}},
      {"bad_key",
       "upstream: \"http://127.0.0.1:9000\"\nlimiters:\n  per-key: {algorithm: fixed_window, "
       "limit: 10, window: 1m, key: \"ip+heder:X-User\"}\nroutes: [{name: a}]",
       {"proxy.yaml:3:66: limiters.per-key.key: \"heder:X-User\" is not a key part; use ip, "
        "header:NAME, bearer, cookie:NAME, query:NAME, cert:subject, cert:san, cert:fingerprint, "
        "jwt:CLAIM (a dotted path: jwt:org.id), route or global, joined with + "
        "(ip+header:X-User)"}},
      // SPEC §8: JWT providers and routes' auth.
      {"jwt_provider_without_keys",
       "upstream: \"http://127.0.0.1:9000\"\nauth:\n  jwt:\n    main: {issuer: \"https://idp/\"}\n"
       "routes: [{name: a}]",
       {"proxy.yaml:4:11: auth.jwt.main.jwks: give one of jwks ({url} or {file}) and keys (PEM "
        "files or secrets)"}},
      {"jwt_provider_both_key_sources",
       "upstream: \"http://127.0.0.1:9000\"\nauth:\n  jwt:\n    main:\n      issuer: i\n"
       "      jwks: {file: /k.json}\n      keys: [{secret: s, alg: HS256}]\n"
       "      algorithms: [HS256]\nroutes: [{name: a}]",
       {"proxy.yaml:7:13: auth.jwt.main.keys: give one of jwks ({url} or {file}) and keys (PEM "
        "files or secrets)"}},
      {"jwt_none_algorithm",
       "upstream: \"http://127.0.0.1:9000\"\nauth:\n  jwt:\n    main:\n      issuer: i\n"
       "      jwks: {file: /k.json}\n      algorithms: [RS256, none, RS257]\nroutes: [{name: a}]",
       {"proxy.yaml:7:27: auth.jwt.main.algorithms: \"none\" is never accepted (an unsigned token "
        "proves nothing)",
        "proxy.yaml:7:33: auth.jwt.main.algorithms: \"RS257\" is not one of RS256, RS384, RS512, "
        "PS256, PS384, PS512, ES256, ES384, ES512, EdDSA, HS256, HS384 or HS512 (did you mean "
        "\"RS256\"?)"}},
      {"jwks_without_algorithms",
       "upstream: \"http://127.0.0.1:9000\"\nauth:\n  jwt:\n    main:\n      issuer: i\n"
       "      jwks: {url: \"http://idp.example.com/jwks\", refresh: 1s}\nroutes: [{name: a}]",
       {"proxy.yaml:6:13: auth.jwt.main.jwks: a key set needs algorithms: the list of those "
        "accepted (RS256, ES256, ...)",
        "proxy.yaml:6:19: auth.jwt.main.jwks.url: \"http://idp.example.com/jwks\" is not an "
        "https:// URL (http:// only to a loopback address)",
        "proxy.yaml:6:59: auth.jwt.main.jwks.refresh: at least 10s: an identity provider is not to "
        "be polled harder"}},
      {"jwt_key_for_unlisted_algorithm",
       "upstream: \"http://127.0.0.1:9000\"\nauth:\n  jwt:\n    main:\n      issuer: i\n"
       "      keys: [{file: /k.pem, alg: ES256}, {file: /k.pem, secret: s, alg: XS1}]\n"
       "      algorithms: [RS256]\nroutes: [{name: a}]",
       {"proxy.yaml:6:14: auth.jwt.main.keys: a key for ES256, which algorithms does not list",
        "proxy.yaml:6:65: auth.jwt.main.keys[1].secret: give one of file (a PEM public key) and "
        "secret (an HMAC secret)",
        "proxy.yaml:6:73: auth.jwt.main.keys[1].alg: \"XS1\" is not one of RS256, RS384, RS512, "
        "PS256, PS384, PS512, ES256, ES384, ES512, EdDSA, HS256, HS384 or HS512"}},
      {"jwt_bad_from_and_headers",
       "upstream: \"http://127.0.0.1:9000\"\nauth:\n  jwt:\n    main:\n      issuer: i\n"
       "      keys: [{secret: s, alg: HS256}]\n      from: [bearer, ip]\n"
       "      claims_to_headers: {sub: X-User, org..id: X-Org, plan: \"Content-Length\", "
       "tier: \"X Tier\"}\n      leeway: 1h\nroutes: [{name: a}]",
       {"proxy.yaml:7:22: auth.jwt.main.from: \"ip\" is not where a token travels; use bearer, "
        "cookie:NAME, header:NAME or query:NAME",
        "proxy.yaml:8:40: auth.jwt.main.claims_to_headers.org..id: not a claim (a dotted path: "
        "org.id)",
        "proxy.yaml:8:62: auth.jwt.main.claims_to_headers.plan: \"Content-Length\" frames or "
        "routes the request; name another header",
        "proxy.yaml:8:86: auth.jwt.main.claims_to_headers.tier: \"X Tier\" is not a header field "
        "name",
        "proxy.yaml:9:15: auth.jwt.main.leeway: between 0s and 10m"}},
      {"route_auth_unknown_provider",
       "upstream: \"http://127.0.0.1:9000\"\nauth:\n  jwt:\n    main: {issuer: i, keys: [{secret: "
       "s, alg: HS256}]}\nroutes: [{name: a, auth: {jwt: mian}}]",
       {"proxy.yaml:5:32: routes[0].auth.jwt: no JWT provider is named \"mian\" (did you mean "
        "\"main\"?); defined: main"}},
      {"claim_key_without_auth",
       "upstream: \"http://127.0.0.1:9000\"\nlimiters:\n  per-user: {algorithm: fixed_window, "
       "limit: 10, window: 1m, key: \"jwt:sub\"}\n  bad: {algorithm: fixed_window, limit: 10, "
       "window: 1m, key: \"jwt:a..b\"}\nroutes: [{name: a, limiters: [per-user]}]",
       {"proxy.yaml:4:62: limiters.bad.key: \"jwt:a..b\" is not a key part; use ip, header:NAME, "
        "bearer, cookie:NAME, query:NAME, cert:subject, cert:san, cert:fingerprint, jwt:CLAIM (a "
        "dotted path: jwt:org.id), route or global, joined with + (ip+header:X-User)",
        "proxy.yaml:5:30: routes[0].limiters: limiter \"per-user\" is keyed on \"jwt:sub\", a "
        "verified token's claim, but the route has no auth (auth: {jwt: PROVIDER})"}},
      {"tier_without_tiers",
       "upstream: \"http://127.0.0.1:9000\"\nlimiters:\n  a: {algorithm: fixed_window, limit: 1, "
       "window: 1m, tier: \"header:X-Plan\"}\n  b: {algorithm: fixed_window, limit: 1, window: 1m, "
       "tier: \"hdr:X\", tiers: {pro: {limit: 0}, gold: {rate: 1/s}}}\nroutes: [{name: a}]",
       {"proxy.yaml:3:60: limiters.a.tier: tier (the key whose value chooses) and tiers (each "
        "value's parameters) go together",
        "proxy.yaml:4:60: limiters.b.tier: \"hdr:X\" is not a key part; use ip, header:NAME, "
        "bearer, cookie:NAME, query:NAME, cert:subject, cert:san, cert:fingerprint, jwt:CLAIM (a "
        "dotted path: jwt:org.id), route or global, joined with + (ip+header:X-User)",
        "proxy.yaml:4:90: limiters.b.tiers.pro.limit: \"0\" is not a whole number from 1 to "
        "4294967295",
        "proxy.yaml:4:101: limiters.b.tiers.gold: unknown key \"rate\"; accepted keys: limit, "
        "window, calendar or timezone"}},
      {"calendar_window_problems",
       "upstream: \"http://127.0.0.1:9000\"\nlimiters:\n  a: {algorithm: fixed_window, limit: 1, "
       "window: 1m, calendar: month}\n  b: {algorithm: fixed_window, limit: 1}\n  c: {algorithm: "
       "fixed_window, limit: 1, window: 1m, timezone: UTC}\n  d: {algorithm: fixed_window, limit: "
       "1, calendar: fortnight, timezone: Mars/Olympus}\n  e: {algorithm: sliding_window, limit: "
       "1, "
       "window: 1m, calendar: day}\nroutes: [{name: a}]",
       {"proxy.yaml:3:64: limiters.a.calendar: give window (a length) or calendar (day, week, "
        "month or year), not both",
        "proxy.yaml:4:6: limiters.b.window: missing (fixed_window needs limit and window or "
        "calendar)",
        "proxy.yaml:5:64: limiters.c.timezone: places calendar windows: it needs calendar",
        "proxy.yaml:6:52: limiters.d.calendar: \"fortnight\" is not one of day, week, month or "
        "year",
        "proxy.yaml:6:73: limiters.d.timezone: \"Mars/Olympus\" is not a time zone of the system's "
        "database (an IANA name: Europe/Berlin, America/New_York, UTC)",
        "proxy.yaml:7:66: limiters.e.calendar: does not apply to sliding_window (its parameters: "
        "limit and window)"}},
      {"cost_not_response",
       "upstream: \"http://127.0.0.1:9000\"\nlimiters:\n  t: {algorithm: token_bucket, rate: 10/s, "
       "cost: request}\nroutes: [{name: a}]",
       {"proxy.yaml:3:50: limiters.t.cost: \"request\" is not one of response"}},
      {"count_if_problems",
       "upstream: \"http://127.0.0.1:9000\"\nlimiters:\n  a: {algorithm: fixed_window, limit: 5, "
       "window: 1m, count_if: {status: [401, 700, nope]}}\n  b: {algorithm: fixed_window, limit: "
       "5, window: 1m, count_if: {}}\nroutes: [{name: a}]",
       {"proxy.yaml:3:73: limiters.a.count_if.status: \"700\" is not a status from 100 to 599",
        "proxy.yaml:3:73: limiters.a.count_if.status: \"nope\" is not a status from 100 to 599",
        "proxy.yaml:4:64: limiters.b.count_if.status: missing"}},
      {"charge_after_response_where_it_cannot_work",
       "upstream: \"http://127.0.0.1:9000\"\nlimiters:\n  a: {algorithm: concurrency, limit: 5, "
       "cost: response}\n  b: {algorithm: token_bucket, rate: 10/s, mode: delay, count_if: "
       "{status: 401}}\n  c: {algorithm: fixed_window, limit: 5, window: 1m, lease: 2, cost: "
       "response}\nroutes: [{name: a}]",
       {"proxy.yaml:3:47: limiters.a.cost: does not apply to concurrency: it counts requests in "
        "flight, not what they cost",
        "proxy.yaml:4:50: limiters.b.mode: delay does not apply with count_if: a request is "
        "admitted before its cost is known",
        "proxy.yaml:5:61: limiters.c.lease: does not apply with cost: response yet: a lease hands "
        "out permits counted before the request"}},
      {"route_without_cost_from",
       "upstream: \"http://127.0.0.1:9000\"\nlimiters:\n  tokens: {algorithm: token_bucket, rate: "
       "100/s, burst: 100, cost: response}\nroutes: [{name: a, limiters: [tokens]}]",
       {"proxy.yaml:4:30: routes[0].limiters: limiter \"tokens\" is charged what the response cost "
        "(cost: response), but the route has no cost_from"}},
      {"cost_from_problems",
       "upstream: \"http://127.0.0.1:9000\"\nlimiters:\n  tokens: {algorithm: token_bucket, rate: "
       "100/s, burst: 100, cost: response}\nroutes:\n  - {name: a, match: {path: /a}, limiters: "
       "[tokens], cost_from: {usage: openai, header: X-Cost}}\n  - {name: b, match: {path: /b}, "
       "limiters: [tokens], cost_from: {estimate: 5}}\n  - {name: c, match: {path: /c}, limiters: "
       "[tokens], cost_from: {usage: gemini, include_usage: yes}}\n  - {name: d, match: {path: "
       "/d}, limiters: [tokens], cost_from: {usage: anthropic, include_usage: true}}\n  - {name: "
       "e, match: {path: /e}, limiters: [tokens], cost_from: {header: \"X Cost\", count: input}}\n "
       " - {name: f, match: {path: /f}, limiters: [tokens], cost_from: {json: usage..total}}\n  - "
       "{name: g, match: {path: /g}, limiters: [tokens], cost_from: {bytes: request, estimate: "
       "101}}\n  - {name: h, match: {path: /h}, respond: {status: 200}, cost_from: {bytes: "
       "response}}\n  - {name: i, match: {path: /i}, limiters: [tokens], cost_from: {bytes: "
       "response, "
       "include_usage: true}}",
       {"proxy.yaml:5:89: routes[0].cost_from.header: give only one of usage, header, json or "
        "bytes",
        "proxy.yaml:6:65: routes[1].cost_from: give one of usage, header, json or bytes: where the "
        "cost is read",
        "proxy.yaml:7:73: routes[2].cost_from.usage: \"gemini\" is not one of openai or anthropic",
        "proxy.yaml:7:96: routes[2].cost_from.include_usage: \"yes\" is not one of true or false",
        "proxy.yaml:8:99: routes[3].cost_from.include_usage: applies with usage: openai only",
        "proxy.yaml:9:74: routes[4].cost_from.header: \"X Cost\" is not a header name",
        "proxy.yaml:9:91: routes[4].cost_from.count: applies with usage only (which of its tokens "
        "count)",
        "proxy.yaml:10:72: routes[5].cost_from.json: \"usage..total\" is not a dotted path "
        "(usage.total_tokens)",
        "proxy.yaml:11:65: routes[6].cost_from: estimate 101 is more than limiter \"tokens\" can "
        "ever admit (at most 100)",
        "proxy.yaml:11:73: routes[6].cost_from.bytes: \"request\" is not one of response",
        "proxy.yaml:12:69: routes[7].cost_from: a route that answers itself (respond) has no "
        "upstream response to read a cost from",
        "proxy.yaml:13:98: routes[8].cost_from.include_usage: applies with usage: openai only"}},
      {"global_joined",
       "upstream: \"http://127.0.0.1:9000\"\nlimiters:\n  all: {algorithm: fixed_window, limit: "
       "10, window: 1m, key: \"global+ip\"}\nroutes: [{name: a}]",
       {"proxy.yaml:3:62: limiters.all.key: global is one bucket for every request and cannot be "
        "joined with other parts"}},
      {"bad_mode",
       "upstream: \"http://127.0.0.1:9000\"\nlimiters:\n  per-ip: {algorithm: fixed_window, limit: "
       "10, window: 1m, mode: queue}\nroutes: [{name: a}]",
       {"proxy.yaml:3:66: limiters.per-ip.mode: \"queue\" is not one of reject or delay"}},
      {"delay_concurrency",
       "upstream: \"http://127.0.0.1:9000\"\nlimiters:\n  inflight: {algorithm: concurrency, "
       "limit: 10, mode: delay}\nroutes: [{name: a}]",
       {"proxy.yaml:3:55: limiters.inflight.mode: delay does not apply to concurrency: when a "
        "permit comes back is not known"}},
      {"bad_status",
       "upstream: \"http://127.0.0.1:9000\"\nlimiters:\n  per-ip: {algorithm: fixed_window, limit: "
       "10, window: 1m, status: 200}\nroutes: [{name: a}]",
       {"proxy.yaml:3:68: limiters.per-ip.status: \"200\" is not a whole number from 400 to 599"}},
      {"bad_override",
       "upstream: \"http://127.0.0.1:9000\"\nlimiters:\n  per-key:\n    algorithm: fixed_window\n  "
       "  limit: 10\n    window: 1m\n    overrides: {\"premium\": {limit: 0}, \"gold\": {rate: "
       "10/s}}\nroutes: [{name: a}]",
       {"proxy.yaml:7:36: limiters.per-key.overrides.premium.limit: \"0\" is not a whole number "
        "from 1 to 4294967295",
        "proxy.yaml:7:49: limiters.per-key.overrides.gold: unknown key \"rate\"; accepted keys: "
        "limit, window, calendar or timezone"}},
      {"unknown_limiter",
       "upstream: \"http://127.0.0.1:9000\"\nlimiters:\n  per-ip: {algorithm: fixed_window, limit: "
       "10, window: 1m}\nroutes: [{name: a, limiters: [per_ip]}]",
       {"proxy.yaml:4:31: routes[0].limiters: no limiter is named \"per_ip\" (did you mean "
        "\"per-ip\"?); defined: per-ip"}},
      {"limiter_twice",
       "upstream: \"http://127.0.0.1:9000\"\nlimiters:\n  per-ip: {algorithm: fixed_window, limit: "
       "10, window: 1m}\nroutes: [{name: a, limiters: [per-ip, per-ip]}]",
       {"proxy.yaml:4:39: routes[0].limiters: \"per-ip\" is named twice"}},
      {"cost_too_large",
       "upstream: \"http://127.0.0.1:9000\"\nlimiters:\n  per-ip: {algorithm: fixed_window, limit: "
       "10, window: 1m}\n  bucket: {algorithm: leaky_bucket, rate: 1/s, burst: 4}\nroutes: [{name: "
       "a, limiters: [per-ip, bucket], cost: 8}]",
       {"proxy.yaml:5:54: routes[0].cost: cost 8 is more than limiter \"bucket\" can ever admit "
        "(at most 5)"}},
      {"cost_too_large_for_an_override",
       "upstream: \"http://127.0.0.1:9000\"\nlimiters:\n  per-key: {algorithm: fixed_window, "
       "limit: "
       "10, window: 1m, key: \"header:X-Key\", overrides: {\"small\": {limit: 2}}}\nroutes: "
       "[{name: "
       "a, limiters: [per-key], cost: 5}]",
       {"proxy.yaml:4:47: routes[0].cost: cost 5 is more than limiter \"per-key\" for key "
        "\"small\" can ever admit (at most 2)"}},
      {"zero_cost",
       "upstream: \"http://127.0.0.1:9000\"\nroutes: [{name: a, cost: 0}]",
       {"proxy.yaml:2:26: routes[0].cost: \"0\" is not a whole number from 1 to 4294967295"}},
      {"no_upstream",
       "routes: [{name: a, match: {path: /a}}]",
       {"proxy.yaml:1:10: routes[0]: no upstream; give one here or at the top level"}},
      {"limiter_name_with_a_quote",
       "upstream: \"http://127.0.0.1:9000\"\nlimiters:\n  'a\"b': {algorithm: fixed_window, limit: "
       "1, window: 1s}\nroutes: [{name: r}]",
       {"proxy.yaml:3:3: limiters: the name \"a\\x22b\" is not plain: use printable ASCII without "
        "'\"' or '\\' (a name goes as it is into RateLimit headers, metrics labels and log "
        "lines)"}},
      {"route_name_with_a_newline",
       "upstream: \"http://127.0.0.1:9000\"\nroutes: [{name: \"r\\n1\"}]",
       {"proxy.yaml:2:17: routes[0].name: the name \"r\\x0a1\" is not plain: use printable ASCII "
        "without '\"' or '\\' (a name goes as it is into RateLimit headers, metrics labels and "
        "log lines)"}},
      // An empty value reads as an empty mapping, for a route and a limiter too: it still needs
      // an upstream, or an algorithm (both were once taken without a word).
      {"empty_route_without_upstream",
       "routes:\n  - ~",
       {"proxy.yaml:2:5: routes[0]: no upstream; give one here or at the top level"}},
      {"empty_limiter",
       "upstream: \"http://127.0.0.1:9000\"\nlimiters:\n  l: ~\nroutes: [{name: a, limiters: [l]}]",
       {"proxy.yaml:3:6: limiters.l.algorithm: missing"}},
      {"respond_and_upstream",
       "routes: [{name: a, upstream: \"http://127.0.0.1:9000\", respond: {status: 200}}]",
       {"proxy.yaml:1:64: routes[0].respond: a route answers itself (respond) or forwards "
        "(upstream), not both"}},
      {"respond_with_an_interim_status",
       "routes: [{name: a, respond: {status: 101}}]",
       {"proxy.yaml:1:38: routes[0].respond.status: \"101\" is not a whole number from 200 to "
        "599"}},
      {"respond_204_with_a_body",
       "routes: [{name: a, respond: {status: 204, body: \"no\"}}]",
       {"proxy.yaml:1:49: routes[0].respond.body: a 204 or 304 answer has no body (RFC 9110 "
        "§15.3.5, §15.4.5)"}},
      {"two_paths",
       "upstream: \"http://127.0.0.1:9000\"\nroutes: [{name: a, match: {path: /a, path_prefix: "
       "/b}}]",
       {"proxy.yaml:2:51: routes[0].match.path_prefix: only one of path, path_prefix and "
        "path_regex may be given"}},
      {"relative_path",
       "upstream: \"http://127.0.0.1:9000\"\nroutes: [{name: a, match: {path_prefix: api/}}]",
       {"proxy.yaml:2:41: routes[0].match.path_prefix: \"api/\" must start with /"}},
      {"bad_regex",
       "upstream: \"http://127.0.0.1:9000\"\nroutes: [{name: a, match: {path_regex: \"^/v(1|2\"}}]",
       {"proxy.yaml:2:40: routes[0].match.path_regex: \"^/v(1|2\" is not a valid regular "
        "expression: Unmatched marking parenthesis ( or \\( (at character 7)"}},
      {"bad_method",
       "upstream: \"http://127.0.0.1:9000\"\nroutes: [{name: a, match: {methods: [GET, \"P O S "
       "T\"]}}]",
       {"proxy.yaml:2:37: routes[0].match.methods: \"P O S T\" is not an HTTP method"}},
      {"header_absent_with_value",
       "upstream: \"http://127.0.0.1:9000\"\nroutes: [{name: a, match: {headers: [{name: X-Tier, "
       "present: false, value: gold}]}}]",
       {"proxy.yaml:2:76: routes[0].match.headers[0].value: a header that must be absent cannot "
        "have a value"}},
      {"duplicate_route_name",
       "upstream: \"http://127.0.0.1:9000\"\nroutes:\n  - {name: a, match: {path: /a}}\n  - {name: "
       "a, match: {path: /b}}",
       {"proxy.yaml:4:5: routes[1]: the name \"a\" is taken by routes[0]"}},
      {"unreachable_prefix",
       "upstream: \"http://127.0.0.1:9000\"\nroutes:\n  - {name: api, match: {path_prefix: "
       "/api/}}\n  - {name: login, match: {path: /api/login, methods: [POST]}}",
       {"proxy.yaml:4:5: routes[1] (\"login\") can never match: routes[0] (\"api\") before it "
        "matches every request it would"}},
      {"unreachable_catch_all",
       "upstream: \"http://127.0.0.1:9000\"\nroutes:\n  - {name: all}\n  - {name: status, match: "
       "{path: /status}}",
       {"proxy.yaml:4:5: routes[1] (\"status\") can never match: routes[0] (\"all\") before it "
        "matches every request it would"}},
      {"tls_without_key",
       "listen: \":8443\"\ntls: {cert: /c.pem}\nupstream: \"http://127.0.0.1:9000\"\nroutes: "
       "[{name: a}]",
       {"proxy.yaml:2:6: tls.key: missing"}},
      {"tls_bad_min_version",
       "listen: \":8443\"\ntls: {cert: /c.pem, key: /k.pem, min_version: \"1.1\"}\nupstream: "
       "\"http://127.0.0.1:9000\"\nroutes: [{name: a}]",
       {"proxy.yaml:2:47: tls.min_version: \"1.1\" is not one of 1.2 or 1.3 (did you mean "
        "\"1.2\"?)"}},
      {"tls_ocsp_fetch_not_a_flag",
       "listen: \":8443\"\ntls: {cert: /c.pem, key: /k.pem, ocsp_fetch: sometimes}\nupstream: "
       "\"http://127.0.0.1:9000\"\nroutes: [{name: a}]",
       {"proxy.yaml:2:46: tls.ocsp_fetch: \"sometimes\" is not one of true or false"}},
      {"client_cert_without_ca",
       "listen: \":8443\"\ntls: {cert: /c.pem, key: /k.pem, client_cert: require}\nupstream: "
       "\"http://127.0.0.1:9000\"\nroutes: [{name: a}]",
       {"proxy.yaml:2:47: tls.client_cert: needs client_ca: the CA that signs the clients' "
        "certificates"}},
      {"tls_beside_a_listen_list",
       "listen: [\":8080\"]\ntls: {cert: /c.pem, key: /k.pem}\nupstream: "
       "\"http://127.0.0.1:9000\"\nroutes: [{name: a}]",
       {"proxy.yaml:2:6: tls: applies to a single listen address; with a list, give each TLS "
        "address its own: {address: \"0.0.0.0:8443\", tls: {...}}"}},
      {"listen_list_problems",
       "listen:\n  - \":8080\"\n  - \"8443\"\n  - {address: \":8080\", tsl: {}}\n  - {tls: {cert: "
       "/c.pem, key: /k.pem}}\nupstream: \"http://127.0.0.1:9000\"\nroutes: [{name: a}]",
       {"proxy.yaml:3:5: listen[1]: \"8443\" is not host:port (0.0.0.0:8080, [::]:8080)",
        "proxy.yaml:4:5: listen[2]: the same address as listen[0]",
        "proxy.yaml:4:24: listen[2]: unknown key \"tsl\" (did you mean \"tls\"?); accepted keys: "
        "address or tls",
        "proxy.yaml:5:5: listen[3].address: missing"}},
      {"certificate_key_without_client_ca",
       "listen: \":8443\"\ntls: {cert: /c.pem, key: /k.pem}\nupstream: \"http://127.0.0.1:9000\"\n"
       "limiters: {per-client: {algorithm: fixed_window, limit: 5, window: 1s, key: "
       "cert:fingerprint}}\nroutes: [{name: a, limiters: [per-client]}]",
       {"proxy.yaml:4:24: limiters.per-client.key: \"cert:fingerprint\" reads the client "
        "certificate, but no listener asks for one (tls.client_ca)"}},
      {"upstream_tls_cert_without_key",
       "upstream: \"https://127.0.0.1:9443\"\nupstream_tls: {cert: /c.pem}\nroutes: [{name: a}]",
       {"proxy.yaml:2:15: upstream_tls.key: missing: cert and key go together"}},
  };
  return table;
}

}  // namespace sluice::test
