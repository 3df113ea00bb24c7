#pragma once

// What the Redis store's tests share: Redis servers of either kind, the timing of the failure
// tests, what Redis says about itself (INFO), flushing its code, one loop's parts of the store
// without the store, and the users of the cluster tests.
#include <gtest/gtest.h>

#include <array>
#include <boost/asio/this_coro.hpp>
#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "limiter/key_hash.hpp"
#include "proxy/store/redis/redis_connection.hpp"
#include "proxy/store/redis/redis_decision.hpp"
#include "proxy/store/redis/redis_loop.hpp"
#include "tests/support/event_loop.hpp"
#include "tests/support/pipeline_fixture.hpp"
#include "tests/support/redis_cluster.hpp"
#include "tests/support/redis_server.hpp"
#include "tests/support/redis_store_fixture.hpp"

namespace sluice::test {

using namespace std::chrono_literals;

/// A Redis that has functions (7 and later), or one that has not: FUNCTION renamed away, as on
/// Redis 6, so decide.lua runs as a script.
inline std::unique_ptr<RedisServer> redis_with(std::string_view code) {
  if (code == "scripts") {
    return std::make_unique<RedisServer>(
        "", std::vector<std::string>{"--rename-command", "FUNCTION", ""});
  }
  return std::make_unique<RedisServer>();
}

/// The Redis timeout of the failure tests, and the slack over it that a request may take when
/// Redis fails: the decision itself and the event loop's turn on a busy machine (sanitizers slow
/// everything several times over). The slack stays under the timeout, so a request that waited
/// for two timeouts instead of one still fails.
constexpr auto kTimeout = 100ms;
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
constexpr limiter::Duration kSlack = 90ms;
#else
constexpr limiter::Duration kSlack = 60ms;
#endif
constexpr std::string_view kTimeoutText = "100ms";

/// The store section for `server` with the 100 ms timeout and `on_error`.
inline std::string timing_out_after_100ms(const RedisServer& server, std::string_view on_error) {
  return "url: \"" + server.url() + "\", timeout: " + std::string(kTimeoutText) +
         ", on_error: " + std::string(on_error);
}

/// A sliding log: no window edge can fall inside a test and reset the count.
inline const char* const kTwoPerHour = R"(
upstream: http://127.0.0.1:9000
limiters:
  per-ip: {algorithm: sliding_log, limit: 2, window: 1h}
routes: [{name: api, limiters: [per-ip]}]
)";

inline const char* const kHundredPerHour = R"(
upstream: http://127.0.0.1:9000
limiters:
  per-ip: {algorithm: fixed_window, limit: 100, window: 1h}
  per-route: {algorithm: token_bucket, rate: 1000/h, burst: 1000, key: route}
routes: [{name: api, limiters: [per-ip, per-route]}]
)";

inline const char* const kOneAtATime = R"(
upstream: http://127.0.0.1:9000
limiters:
  one: {algorithm: concurrency, limit: 1}
routes: [{name: api, limiters: [one]}]
)";

/// Through the store on Redis's clock, timed.
inline std::pair<pipeline::Decision, limiter::Duration> timed(StoreFixture& fixture,
                                                              const Request& request = {}) {
  const auto started = std::chrono::steady_clock::now();
  pipeline::Decision decision = fixture.redis(request, std::nullopt);
  return {decision, std::chrono::steady_clock::now() - started};
}

/// Sends a request every 10 ms until the store answers again; how long that took.
inline limiter::Duration time_to_recover(StoreFixture& fixture, limiter::Duration patience) {
  const auto started = std::chrono::steady_clock::now();
  while (std::chrono::steady_clock::now() - started < patience) {
    fixture.loop().run_for(10ms);
    timed(fixture, {.peer = "198.51.100.99"});
    if (fixture.store().available()) {
      break;
    }
  }
  return std::chrono::steady_clock::now() - started;
}

/// A number from Redis's `INFO section`: the digits after `field`; -1 when it is not there.
/// Asked on a connection of its own.
inline long long redis_info(StoreFixture& fixture, std::string_view section,
                            std::string_view field) {
  long long value = -1;
  fixture.loop().run([&]() -> io::Awaitable<void> {
    auto connection = co_await store::redis::RedisConnection::open(
        fixture.store().options().endpoint, fixture.store().options().url, 1s);
    const std::array<std::string_view, 2> info{"INFO", section};
    const store::redis::RedisReply reply = co_await connection->command(info, 1s);
    const std::size_t at = reply.value.text.find(field);
    if (at != std::string::npos) {
      value = std::stoll(reply.value.text.substr(at + field.size()));
    }
    connection->close();
  });
  return value;
}

/// Connections Redis has accepted since it started (INFO stats), this one included.
inline long long connections_received(StoreFixture& fixture) {
  return redis_info(fixture, "stats", "total_connections_received:");
}

/// FUNCTION FLUSH and SCRIPT FLUSH, from a connection of its own.
inline void flush_code(StoreFixture& fixture) {
  fixture.loop().run([&]() -> io::Awaitable<void> {
    auto connection = co_await store::redis::RedisConnection::open(
        fixture.store().options().endpoint, fixture.store().options().url, 1s);
    for (const std::string_view what : {"FUNCTION", "SCRIPT"}) {
      const std::array<std::string_view, 2> flush{what, "FLUSH"};
      co_await connection->command(flush, 1s);
    }
    connection->close();
  });
}

/// The Redis options of a store section (`url`, and more options), as a config reads them.
inline config::RedisOptions redis_options(const std::string& store) {
  return PipelineFixture(
             "upstream: http://127.0.0.1:9000\nroutes: [{name: all}]\n"
             "store: {type: redis, redis: {" +
             patient_store(store) + "}}\n")
      .config()
      .store.redis;
}

/// One event loop's parts of the Redis store without the store: what RedisStore shares among
/// its loops, and one RedisLoop, wired alike, on a test's event loop. Nothing is opened.
struct LoopParts {
  /// `store`: the store section (`url`, and more options).
  explicit LoopParts(const std::string& store, std::size_t connections = 1)
      : options(redis_options(store)),
        nodes(options),
        code(options.cluster),
        loop(options, now, nodes, code, holders, connections, store::redis::PermitIds(1, 0)) {}
  LoopParts(const LoopParts&) = delete;
  LoopParts& operator=(const LoopParts&) = delete;
  LoopParts(LoopParts&&) = delete;
  LoopParts& operator=(LoopParts&&) = delete;
  ~LoopParts() { loop.lanes.close(); }

  /// As RedisStore::open(): the leases' timer, then the lanes, as the routing opens them.
  void open() {
    events.run([this]() -> io::Awaitable<void> {
      loop.leases.open(co_await boost::asio::this_coro::executor);
      co_await loop.routing.open();
    });
  }

  EventLoop events;  ///< Outlives the parts: their coroutines end with it.
  config::RedisOptions options;
  std::optional<limiter::TimePoint> now;  ///< The simulated clock: Redis's own.
  store::redis::RedisNodes nodes;
  store::redis::RedisCode code;
  store::redis::LeaseHolders holders{1, 1};
  store::redis::RedisLoop loop;
};

// The cluster tests' users: requests keyed by an X-User header.

/// "user-N": the names outlive the requests, whose headers only view them.
inline const std::string& user(std::size_t n) {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> all;
    for (std::size_t i = 0; i < 200; ++i) {
      all.push_back("user-" + std::to_string(i));
    }
    return all;
  }();
  return names.at(n);
}

/// A request of user `name` (its X-User header), which must outlive it.
inline Request of_user(const std::string& name) { return Request{.headers = {{"X-User", name}}}; }

/// The slot of a user's per-user key: the store's routing, computed apart.
inline unsigned slot_of_user(const std::string& user) {
  return store::redis::cluster_slot(limiter::hash_key(user, pipeline::kSharedKeySeed));
}

inline std::string cluster_store(const RedisCluster& cluster, const std::string& more = "") {
  return "url: \"" + cluster.url() + "\", cluster: true" + (more.empty() ? "" : ", " + more);
}

/// A per-user limit of 3 a day.
inline const std::string kPerUserYaml =
    "upstream: http://127.0.0.1:9000\nlimiters:\n"
    "  per-user: {algorithm: fixed_window, limit: 3, window: 1d, key: \"header:X-User\"}\n"
    "routes: [{name: api, limiters: [per-user]}]\n";

/// Whether a decision is Redis's (allowed or limited), not on_error's (deny: 503).
inline bool decided_by_redis(const pipeline::Decision& decision) {
  return decision.outcome == pipeline::Outcome::allowed ||
         decision.outcome == pipeline::Outcome::limited;
}

}  // namespace sluice::test
