#include "proxy/store/redis/redis_store.hpp"

#include <spdlog/spdlog.h>

#include <array>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/steady_timer.hpp>
#include <limits>
#include <random>

#include "config/url.hpp"
#include "limiter/key_hash.hpp"
#include "proxy/io/net.hpp"
#include "proxy/store/redis/decision_batch.hpp"
#include "proxy/store/redis/redis_scripts.hpp"

namespace sluice::store::redis {
namespace {

/// Backoff between reconnection attempts: doubling, capped so that a Redis that comes back is
/// found again within a second.
constexpr std::chrono::milliseconds kFirstBackoff{50};
constexpr std::chrono::milliseconds kMaxBackoff{400};

/// Connecting and loading the scripts may take longer than a decision.
constexpr limiter::Duration kMinConnectTimeout = std::chrono::seconds(1);

std::string reason(const RedisReply& reply) {
  if (reply.error) {
    return reply.error == beast::error::timeout ? std::string("timed out") : reply.error.message();
  }
  return reply.value.is_error() ? reply.value.text : std::string("unexpected reply");
}

/// Loads of the code one call may make before it gives up: another flush may land between a load
/// and the call it was for.
constexpr int kCodeReloads = 2;

/// Whether an error reply says Redis has forgotten the code (SCRIPT FLUSH, FUNCTION FLUSH, a
/// failover to a node that never had it).
bool code_missing(std::string_view error) {
  return error.starts_with("NOSCRIPT") || error.find("Function not found") != error.npos;
}

/// Whether an error reply says Redis has no functions (before 7): scripts are used instead.
bool no_functions(std::string_view error) { return error.find("unknown command") != error.npos; }

/// Whether an error says the node does not serve a key's slot: the slot map is stale.
bool redirected(std::string_view error) {
  return error.find("non local key") != error.npos || error.starts_with("MOVED") ||
         error.starts_with("ASK");
}

/// The permits of one lease of `limiter` (its `lease:`, at most what its key can hold at once);
/// 0 when it does not lease.
limiter::Permits lease_size(const config::LimiterConfig& limiter,
                            const limiter::LimiterOptions& o) noexcept {
  if (limiter.lease == 0) {
    return 0;
  }
  double capacity = static_cast<double>(o.limit);
  if (o.algorithm == limiter::AlgorithmKind::token_bucket) {
    capacity = o.burst.value_or(std::max(1.0, o.rate.per_second()));
  } else if (o.algorithm == limiter::AlgorithmKind::leaky_bucket) {
    capacity = o.burst.value_or(0) + 1;
  }
  return static_cast<limiter::Permits>(std::min<std::uint64_t>(
      std::min<std::uint64_t>(limiter.lease, std::numeric_limits<limiter::Permits>::max()),
      static_cast<std::uint64_t>(std::max(1.0, capacity))));
}

/// How long a lease taken at `now` may be spent: a fixed window's until the window ends (so it
/// is spent in the window that counted it, and fixed windows never overshoot); another
/// limiter's for as long as its key takes to forget a full load (the window; the time to refill
/// or drain the whole bucket). However long, a lease holds at most its permits, which bounds
/// what a replica can spend beyond the limit over any span (docs/operations.md, "Leases").
limiter::TimePoint lease_until(const limiter::LimiterOptions& o, const limiter::Status& status,
                               limiter::TimePoint now) noexcept {
  using limiter::AlgorithmKind;
  switch (o.algorithm) {
    case AlgorithmKind::fixed_window:
      return now + status.reset;
    case AlgorithmKind::token_bucket:
    case AlgorithmKind::leaky_bucket: {
      const double capacity = o.algorithm == AlgorithmKind::token_bucket
                                  ? o.burst.value_or(std::max(1.0, o.rate.per_second()))
                                  : o.burst.value_or(0) + 1;
      return now + std::chrono::duration_cast<limiter::Duration>(
                       std::chrono::duration<double>(capacity / o.rate.per_second()));
    }
    default:
      return now + o.window;
  }
}

/// "redis://host:port", a cluster node's name in messages (its password is the seed's).
std::string node_url(std::string_view address) { return "redis://" + std::string(address); }

}  // namespace

struct RedisStore::Node {
  Node(config::RedisEndpoint endpoint_, std::string address_, std::string url_)
      : endpoint(std::move(endpoint_)), address(std::move(address_)), url(std::move(url_)) {}
  config::RedisEndpoint endpoint;
  std::string address;  ///< "host:port"
  std::string url;      ///< For messages; redacted when shown.
  CircuitBreaker breaker{kProbeInterval};
  /// Loops whose slot map names it a master (always 1 or more on a single Redis): only their
  /// breakers count for available().
  std::atomic<int> serving{0};
};

struct RedisStore::Lane {
  Lane(Node& node_, std::size_t connections_) : node(node_), connections(connections_) {}
  Node& node;
  std::vector<std::shared_ptr<RedisConnection>> connections;  ///< nullptr while reconnecting.
  std::size_t next = 0;
  DecisionBatch* open = nullptr;  ///< Takes the requests that arrive until it is sent.
  /// Waiting to be sent, oldest first; `open` is the last. At most kQueuedBatches.
  std::vector<DecisionBatch*> queued;
  std::size_t senders = 0;  ///< Coroutines sending batches, one call each: kCallsInFlight at most.
  std::vector<std::unique_ptr<DecisionBatch>> batches;  ///< Every batch made, queued or spare.
  std::vector<DecisionBatch*> spare;
  bool serving = true;  ///< Cluster: the loop's slot map names it a master.
};

struct RedisStore::Loop {
  std::vector<std::unique_ptr<Lane>>
      lanes;  ///< One per node; never removed (coroutines hold them).
  std::size_t connections_per_lane = 1;
  std::vector<std::uint16_t> lane_of_slot;  ///< Cluster: per slot, its master's lane or kNone.
  bool refreshing = false;
  std::optional<io::Timer> refreshed;  ///< Cancelled when a slot map refresh ends.
  std::chrono::steady_clock::time_point refreshed_at{};
  OverLimitCache over_limit;
  std::uint64_t permits_issued = 0;
  telemetry::LoopCounter errors;
  telemetry::LoopCounter cached_refusals;
  telemetry::LoopCounter calls;              ///< Calls of decide.lua sent.
  telemetry::LoopCounter requests_in_calls;  ///< Requests they carried.
  telemetry::LoopCounter refunds;
  /// Made when a leased limiter is first met.
  std::unique_ptr<LeaseTable> leases;
  std::optional<io::Timer> leases_granted;  ///< Cancelled when a call that took leases ends.
  telemetry::LoopCounter lease_hits;
  telemetry::LoopCounter leases_taken;
  bool closed = false;
};

RedisStore::RedisStore(config::RedisOptions options, std::size_t loops)
    : options_(std::move(options)), shown_url_(config::redact_url(options_.url)) {
  Node* single = nullptr;
  if (!options_.cluster) {
    single = &nodes_.emplace_back(options_.endpoint, "", options_.url);
  }
  for (std::size_t i = 0; i < loops; ++i) {
    auto& loop = loops_.emplace_back(std::make_unique<Loop>());
    loop->connections_per_lane =
        std::max<std::size_t>(1, options_.pool / std::max<std::size_t>(loops, 1)) +
        (i < options_.pool % loops && options_.pool > loops ? 1 : 0);
    if (single != nullptr) {
      loop->lanes.push_back(std::make_unique<Lane>(*single, loop->connections_per_lane));
      ++single->serving;
    }
  }
  std::random_device random;
  permit_base_ = (std::uint64_t{random()} << 32) ^ random();
}

RedisStore::~RedisStore() = default;

limiter::Duration RedisStore::connect_timeout() const noexcept {
  return std::max(options_.timeout, kMinConnectTimeout);
}

RedisStore::Node& RedisStore::node_at(const std::string& address) {
  const std::scoped_lock lock(nodes_mutex_);
  for (Node& node : nodes_) {
    if (node.address == address) {
      return node;
    }
  }
  config::RedisEndpoint endpoint = options_.endpoint;
  const std::size_t colon = address.rfind(':');
  endpoint.host = address.substr(0, colon);
  endpoint.port = static_cast<std::uint16_t>(std::stoul(address.substr(colon + 1)));
  return nodes_.emplace_back(std::move(endpoint), address, node_url(address));
}

io::Awaitable<std::shared_ptr<RedisConnection>> RedisStore::connect(Node& node) {
  auto connection = co_await RedisConnection::open(node.endpoint, node.url, connect_timeout());
  // On every connection: a Redis that restarted has forgotten the code.
  std::string why;
  if (!co_await load_code(*connection, connect_timeout(), why)) {
    connection->close();
    throw RedisError("Redis at " + config::redact_url(node.url) +
                     ": loading the decision code failed: " + why);
  }
  co_return connection;
}

io::Awaitable<bool> RedisStore::load_code(RedisConnection& connection, limiter::Duration timeout,
                                          std::string& why) {
  const std::array<std::string_view, 4> function_load{"FUNCTION", "LOAD", "REPLACE", library()};
  const RedisReply loaded = co_await connection.command(function_load, timeout);
  if (!loaded.error && !loaded.value.is_error()) {
    functions_ = true;
    co_return true;
  }
  if (loaded.error || !no_functions(loaded.value.text) || options_.cluster) {
    why = reason(loaded);
    if (options_.cluster && !loaded.error && no_functions(loaded.value.text)) {
      why += " (a cluster needs Redis 7 or later: its functions take keys of many slots)";
    }
    co_return false;
  }
  for (const std::string_view script : {decide_script(), release_script()}) {
    const std::array<std::string_view, 3> script_load{"SCRIPT", "LOAD", script};
    const RedisReply reply = co_await connection.command(script_load, timeout);
    if (reply.error || reply.value.is_error()) {
      why = reason(reply);
      co_return false;
    }
  }
  functions_ = false;
  co_return true;
}

std::pair<std::string_view, std::string_view> RedisStore::decide_command() const noexcept {
  if (options_.cluster) {
    return {"FCALL", decide_cluster_function()};
  }
  return functions_ ? std::pair{std::string_view("FCALL"), decide_function()}
                    : std::pair{std::string_view("EVALSHA"), decide_sha()};
}

std::pair<std::string_view, std::string_view> RedisStore::release_command() const noexcept {
  return functions_ ? std::pair{std::string_view("FCALL"), release_function()}
                    : std::pair{std::string_view("EVALSHA"), release_sha()};
}

io::Awaitable<std::optional<SlotMap>> RedisStore::read_slots(RedisConnection& connection,
                                                             std::string& why) {
  const std::array<std::string_view, 2> cluster_slots{"CLUSTER", "SLOTS"};
  const RedisReply reply = co_await connection.command(cluster_slots, connect_timeout());
  if (reply.error || reply.value.is_error()) {
    why = reason(reply);
    co_return std::nullopt;
  }
  auto map = read_slot_map(reply.value, options_.endpoint.host);
  if (!map) {
    why = "unexpected CLUSTER SLOTS reply";
  }
  co_return map;
}

io::Awaitable<void> RedisStore::open(std::size_t index) {
  Loop& loop = *loops_[index];
  const auto executor = co_await net::this_coro::executor;
  loop.refreshed.emplace(executor, io::Timer::time_point::max());
  loop.leases_granted.emplace(executor, io::Timer::time_point::max());
  if (!options_.cluster) {
    for (auto& connection : loop.lanes.front()->connections) {
      connection = co_await connect(loop.lanes.front()->node);
    }
    co_return;
  }
  // The seed may be a replica: it is only asked for the map.
  const auto seed =
      co_await RedisConnection::open(options_.endpoint, options_.url, connect_timeout());
  std::string why;
  const auto map = co_await read_slots(*seed, why);
  seed->close();
  if (!map) {
    if (why.find("cluster support disabled") != why.npos) {
      throw RedisError("Redis at " + shown_url_ +
                       " is not in cluster mode, but store.redis.cluster is true (" + why + ")");
    }
    throw RedisError("Redis at " + shown_url_ + ": CLUSTER SLOTS failed: " + why);
  }
  if (const std::string gap = map->uncovered(); !gap.empty()) {
    throw RedisError("Redis Cluster at " + shown_url_ + ": slots " + gap +
                     " are served by no master");
  }
  co_await follow(loop, *map, true);
  loop.refreshed_at = std::chrono::steady_clock::now();
}

io::Awaitable<void> RedisStore::follow(Loop& loop, const SlotMap& map, bool connect_now) {
  std::vector<std::uint16_t> lane_of_master;
  for (const std::string& address : map.masters) {
    auto known = std::find_if(loop.lanes.begin(), loop.lanes.end(),
                              [&](const auto& lane) { return lane->node.address == address; });
    if (known == loop.lanes.end()) {
      loop.lanes.push_back(std::make_unique<Lane>(node_at(address), loop.connections_per_lane));
      loop.lanes.back()->serving = false;
      known = loop.lanes.end() - 1;
    }
    lane_of_master.push_back(static_cast<std::uint16_t>(known - loop.lanes.begin()));
  }
  std::vector<bool> serving(loop.lanes.size(), false);
  loop.lane_of_slot.assign(kClusterSlots, SlotMap::kNone);
  for (std::size_t slot = 0; slot < kClusterSlots; ++slot) {
    if (map.owner[slot] != SlotMap::kNone) {
      loop.lane_of_slot[slot] = lane_of_master[map.owner[slot]];
      serving[loop.lane_of_slot[slot]] = true;
    }
  }
  const auto executor = co_await net::this_coro::executor;
  for (std::size_t i = 0; i < loop.lanes.size(); ++i) {
    Lane& lane = *loop.lanes[i];
    if (lane.serving == serving[i]) {
      continue;
    }
    lane.serving = serving[i];
    lane.node.serving += lane.serving ? 1 : -1;
    if (!lane.serving) {
      for (auto& connection : lane.connections) {
        if (connection) {
          connection->close();
          connection.reset();
        }
      }
      continue;
    }
    for (std::size_t slot = 0; slot < lane.connections.size(); ++slot) {
      if (connect_now) {
        lane.connections[slot] = co_await connect(lane.node);
      } else {
        net::co_spawn(executor, reconnect(loop, lane, slot), net::detached);
      }
    }
  }
}

io::Awaitable<void> RedisStore::refresh_slots(Loop& loop) {
  if (loop.refreshing) {
    co_await loop.refreshed->async_wait(io::use_nothrow);
    co_return;
  }
  const auto now = std::chrono::steady_clock::now();
  if (now - loop.refreshed_at < kSlotMapInterval || loop.closed) {
    co_return;
  }
  loop.refreshing = true;
  loop.refreshed_at = now;
  // Any node that answers knows the map: the lanes' connections first, then a new one to each
  // node ever met (the seed's address first), for when every connection is down.
  std::optional<SlotMap> map;
  std::string why;
  for (std::size_t i = 0; i < loop.lanes.size() && !map; ++i) {
    for (const auto& connection : loop.lanes[i]->connections) {
      if (connection && !connection->broken()) {
        const auto keep = connection;
        map = co_await read_slots(*keep, why);
        break;
      }
    }
  }
  std::vector<Node*> nodes;
  if (!map) {
    const std::scoped_lock lock(nodes_mutex_);
    for (Node& node : nodes_) {
      nodes.push_back(&node);
    }
  }
  for (std::size_t i = 0; i < nodes.size() && !map; ++i) {
    try {
      const auto connection =
          co_await RedisConnection::open(nodes[i]->endpoint, nodes[i]->url, connect_timeout());
      map = co_await read_slots(*connection, why);
      connection->close();
    } catch (const std::exception&) {
      // Down too: try the next one.
    }
  }
  if (map && map->uncovered().empty() && !loop.closed) {
    co_await follow(loop, *map, false);
  }
  loop.refreshing = false;
  loop.refreshed->cancel();
}

bool RedisStore::route(const Loop& loop, const pipeline::Charges& charges,
                       LaneIndices& lanes) const {
  for (std::size_t i = 0; i < charges.count; ++i) {
    lanes[i] = options_.cluster ? loop.lane_of_slot[cluster_slot(charges.shared_key[i])] : 0;
    if (lanes[i] == SlotMap::kNone) {
      return false;
    }
  }
  return true;
}

void RedisStore::close(std::size_t index) {
  Loop& loop = *loops_[index];
  loop.closed = true;
  for (auto& lane : loop.lanes) {
    for (auto& connection : lane->connections) {
      if (connection) {
        connection->close();
        connection.reset();
      }
    }
  }
}

RedisConnection* RedisStore::pick(Loop& loop, Lane& lane) {
  const std::size_t count = lane.connections.size();
  for (std::size_t tried = 0; tried < count; ++tried) {
    const std::size_t slot = lane.next++ % count;
    const auto& connection = lane.connections[slot];
    if (connection && !connection->broken()) {
      return connection.get();
    }
    if (connection) {
      replace(loop, lane, slot);
    }
  }
  return nullptr;
}

void RedisStore::replace(Loop& loop, Lane& lane, std::size_t slot) {
  auto& connection = lane.connections[slot];
  const auto executor = connection->get_executor();
  connection->close();
  connection.reset();
  net::co_spawn(executor, reconnect(loop, lane, slot), net::detached);
  if (options_.cluster) {
    net::co_spawn(executor, refresh_slots(loop), net::detached);  // a failover, perhaps
  }
}

io::Awaitable<void> RedisStore::reconnect(Loop& loop, Lane& lane, std::size_t slot) {
  auto backoff = std::chrono::milliseconds(kFirstBackoff);
  io::Timer timer(co_await net::this_coro::executor);
  while (!loop.closed && lane.serving && !lane.connections[slot]) {
    try {
      auto connection = co_await connect(lane.node);
      if (loop.closed || !lane.serving || lane.connections[slot]) {
        connection->close();
      } else {
        lane.connections[slot] = std::move(connection);
      }
      co_return;
    } catch (const std::exception&) {
      // Still down (RedisError), or the socket refused an option: try again later.
    }
    if (options_.cluster) {
      co_await refresh_slots(loop);  // a replica may have taken over
    }
    timer.expires_after(backoff);
    co_await timer.async_wait(io::use_nothrow);
    backoff = std::min(backoff * 2, std::chrono::milliseconds(kMaxBackoff));
  }
}

void RedisStore::failed(Loop& loop, Lane& lane, std::string_view why, std::size_t requests) {
  loop.errors.add(requests);
  if (lane.node.breaker.failed(CircuitBreaker::Clock::now())) {
    spdlog::warn("Redis store at {} failed ({}); requests follow on_error: {}",
                 config::redact_url(lane.node.url), why, name_of(options_.on_error));
  }
}

RedisStore::Batch& RedisStore::open_batch(Loop& loop, Lane& lane, const io::Executor& executor) {
  if (lane.open != nullptr) {
    return *lane.open;
  }
  if (lane.spare.empty()) {
    lane.spare.push_back(lane.batches.emplace_back(std::make_unique<Batch>(executor)).get());
  }
  lane.open = lane.spare.back();
  lane.spare.pop_back();
  lane.queued.push_back(lane.open);
  if (lane.senders < kCallsInFlight) {
    ++lane.senders;
    net::co_spawn(executor, send_batches(loop, lane), net::detached);
  }
  return *lane.open;
}

io::Awaitable<void> RedisStore::wait_in_batch(Loop& loop, Lane& lane, BatchWaiter& waiter) {
  Batch& batch = open_batch(loop, lane, co_await net::this_coro::executor);
  batch.add(layout(), waiter);
  if (batch.size() >= kMaxBatch) {
    lane.open = nullptr;  // full: the next request opens another
  }
  co_await batch.wait();
}

io::Awaitable<void> RedisStore::send_batches(Loop& loop, Lane& lane) {
  // Let the loop run what is ready first: the requests it holds join the batch.
  co_await net::post(co_await net::this_coro::executor, io::use_awaitable);
  while (!lane.queued.empty()) {
    Batch& batch = *lane.queued.front();
    lane.queued.erase(lane.queued.begin());
    if (lane.open == &batch) {
      lane.open = nullptr;
    }
    co_await call(loop, lane, batch);
    batch.wake();
    lane.spare.push_back(&batch);
  }
  --lane.senders;
}

io::Awaitable<bool> RedisStore::call(Loop& loop, Lane& lane, Batch& batch) {
  for (int attempt = 0; attempt <= kCodeReloads; ++attempt) {
    RedisConnection* picked = pick(loop, lane);
    if (picked == nullptr) {
      failed(loop, lane, "no connection", batch.size());
      co_return false;
    }
    const std::shared_ptr<RedisConnection> connection = picked->shared_from_this();
    const std::uint64_t ticket = lane.node.breaker.ticket();
    const auto [command, target] = decide_command();
    loop.calls.add();
    loop.requests_in_calls.add(batch.size());
    const RedisReply reply = co_await connection->command(
        batch.arguments(command, target, simulated_now_, options_.cluster), options_.timeout,
        batch);
    if (!reply.error && code_missing(batch.failure())) {
      // The code was flushed (SCRIPT or FUNCTION FLUSH, a failover): load it again.
      std::string why;
      if (attempt < kCodeReloads && co_await load_code(*connection, options_.timeout, why)) {
        continue;
      }
    }
    if (!reply.error && batch.failure().empty()) {
      if (lane.node.breaker.succeeded(ticket)) {
        spdlog::info("Redis store at {} answers again", config::redact_url(lane.node.url));
      }
      co_return true;
    }
    if (!reply.error && options_.cluster && redirected(batch.failure())) {
      // A stale slot map, not a failing Redis: the requests it misplaced try again once the map
      // is read again.
      for (BatchWaiter* waiter : batch.waiters()) {
        waiter->redirected = !waiter->decided;
      }
      net::co_spawn(connection->get_executor(), refresh_slots(loop), net::detached);
      co_return false;
    }
    if (reply.error == beast::error::timeout) {
      // Redis may still run the call when it wakes up: give back the concurrency permits it
      // would take. On the same connection, so after the call; harmless if it never ran.
      for (const BatchWaiter* waiter : batch.waiters()) {
        send_releases(loop, permits_of(waiter->decision, waiter->charges), waiter->permit);
      }
    }
    const bool backed_up = reply.error == boost::system::errc::no_buffer_space;
    if ((reply.error && reply.error != beast::error::timeout && !backed_up) ||
        connection->timeouts_in_a_row() >= kTimeoutsBeforeReplacing) {
      for (std::size_t slot = 0; slot < lane.connections.size(); ++slot) {
        if (lane.connections[slot] == connection) {
          replace(loop, lane, slot);  // the connection broke, or leads nowhere
        }
      }
    }
    std::size_t undecided = 0;
    for (const BatchWaiter* waiter : batch.waiters()) {
      undecided += waiter->decided ? 0 : 1;
    }
    failed(loop, lane, reply.error ? reason(reply) : batch.failure(), undecided);
    co_return false;
  }
  co_return false;
}

std::vector<pipeline::Permit> RedisStore::permits_of(const pipeline::Decision& decision,
                                                     const pipeline::Charges& charges) {
  std::vector<pipeline::Permit> permits;
  for (std::size_t i = 0; i < charges.count; ++i) {
    if (charges.options[i]->algorithm == limiter::AlgorithmKind::concurrency) {
      const limiter::Charge& charge = charges.items[i];
      permits.push_back({charge.limiter, charge.key, charge.cost, charges.shared_key[i],
                         decision.reports[charges.report[i]].limiter, charges.options[i]});
    }
  }
  return permits;
}

void RedisStore::send_releases(Loop& loop, const std::vector<pipeline::Permit>& permits,
                               std::uint64_t id) {
  for (const pipeline::Permit& permit : permits) {
    const std::uint16_t index =
        options_.cluster ? loop.lane_of_slot[cluster_slot(permit.shared_key)] : 0;
    RedisConnection* connection =
        index == SlotMap::kNone ? nullptr : pick(loop, *loop.lanes[index]);
    if (connection == nullptr) {
      continue;  // the lease will end the permit
    }
    net::co_spawn(
        connection->get_executor(),
        run_releases(connection->shared_from_this(), {release_call(layout(), permit, id)}),
        net::detached);
  }
}

// A member, not a lambda: a coroutine lambda's captures live in the closure, which is gone
// once co_spawn has been called; a member function's frame keeps `this` itself.
io::Awaitable<void> RedisStore::run_releases(std::shared_ptr<RedisConnection> connection,
                                             std::vector<ReleaseCall> releases) {
  for (const ReleaseCall& call : releases) {
    const auto [command, target] = release_command();
    const std::array<std::string_view, 6> arguments{command,  target,      "1",
                                                    call.key, call.permit, call.cost};
    RedisReply reply = co_await connection->command(arguments, options_.timeout);
    std::string why;
    if (!reply.error && reply.value.is_error() && code_missing(reply.value.text) &&
        co_await load_code(*connection, options_.timeout, why)) {
      const auto [reloaded_command, reloaded_target] = release_command();
      const std::array<std::string_view, 6> again{reloaded_command, reloaded_target, "1",
                                                  call.key,         call.permit,     call.cost};
      co_await connection->command(again, options_.timeout);
    }
  }
}

io::Awaitable<void> RedisStore::probe(std::size_t index) {
  Loop& loop = *loops_[index];
  for (std::size_t i = 0; i < loop.lanes.size(); ++i) {
    Lane& lane = *loop.lanes[i];
    RedisConnection* picked =
        lane.serving && lane.node.breaker.is_open() ? pick(loop, lane) : nullptr;
    if (picked == nullptr) {
      continue;
    }
    const std::shared_ptr<RedisConnection> connection = picked->shared_from_this();
    const std::array<std::string_view, 1> ping{"PING"};
    const std::uint64_t ticket = lane.node.breaker.ticket();
    const RedisReply pong = co_await connection->command(ping, options_.timeout);
    if (!pong.error && !pong.value.is_error() && lane.node.breaker.succeeded(ticket)) {
      spdlog::info("Redis store at {} answers again", config::redact_url(lane.node.url));
    }
  }
}

pipeline::ChargeResult RedisStore::fall_back(const pipeline::Charges& charges,
                                             limiter::TimePoint now) const {
  switch (options_.on_error) {
    case config::OnStoreError::local:
      return pipeline::Pipeline::charge_locally(charges, now);
    case config::OnStoreError::allow: {
      pipeline::ChargeResult result;
      result.counted = pipeline::Counted::let_pass;
      return result;
    }
    case config::OnStoreError::deny:
      break;
  }
  pipeline::ChargeResult result;
  result.counted = pipeline::Counted::refuse;
  return result;
}

RedisStore::KeyIds RedisStore::cache_ids(const pipeline::Decision& decision,
                                         const pipeline::Charges& charges) {
  std::array<std::uint64_t, limiter::kMaxChargesPerRequest> ids{};
  for (std::size_t i = 0; i < charges.count; ++i) {
    ids[i] = redis_key_id(decision.reports[charges.report[i]].limiter->name, *charges.options[i],
                          charges.shared_key[i]);
  }
  return ids;
}

bool RedisStore::charge_now(std::size_t index, const pipeline::Decision& decision,
                            const pipeline::Charges& charges, limiter::TimePoint now,
                            pipeline::ChargeResult& result) {
  Loop& loop = *loops_[index];
  if (charges.count == 0) {
    result = pipeline::Pipeline::charge_locally(charges, now);
    return true;
  }
  // Keys known to be over their limit are refused here, without a round trip.
  const auto ids = cache_ids(decision, charges);
  const limiter::TimePoint cache_now = simulated_now_.value_or(now);
  result = pipeline::ChargeResult{};
  bool cached = false;
  for (std::size_t i = 0; i < charges.live; ++i) {
    const auto refusal = loop.over_limit.refusal(ids[i], charges.items[i].cost, cache_now);
    if (refusal) {
      cached = true;
      result.outcomes[i] = *refusal;
    } else {
      result.outcomes[i].verdict.admitted = true;
    }
  }
  if (cached) {
    loop.cached_refusals.add();
    return true;
  }
  if (loop.leases && answer_from_leases(loop, decision, charges, ids, cache_now, result)) {
    loop.lease_hits.add();
    return true;
  }
  LaneIndices lanes{};
  if (!route(loop, charges, lanes)) {
    loop.errors.add();  // a slot no master serves (a cluster in trouble)
    result = fall_back(charges, now);
    return true;
  }
  for (std::size_t i = 0; i < charges.count; ++i) {
    if (i > 0 && lanes[i] == lanes[i - 1]) {
      continue;
    }
    Lane& lane = *loop.lanes[lanes[i]];
    if (!lane.node.breaker.allow(CircuitBreaker::Clock::now())) {
      result = fall_back(charges, now);
      return true;
    }
    if (lane.open == nullptr && lane.queued.size() >= kQueuedBatches) {
      loop.errors.add();  // Redis is not keeping up: no room to wait
      result = fall_back(charges, now);
      return true;
    }
  }
  return false;
}

bool RedisStore::answer_from_leases(Loop& loop, const pipeline::Decision& decision,
                                    const pipeline::Charges& charges, const KeyIds& ids,
                                    limiter::TimePoint now, pipeline::ChargeResult& result) {
  std::array<LeaseTable::Lease*, limiter::kMaxChargesPerRequest> leases{};
  for (std::size_t i = 0; i < charges.count; ++i) {
    if (decision.reports[charges.report[i]].limiter->lease == 0) {
      return false;
    }
    leases[i] = loop.leases->usable(ids[i], charges.items[i].cost, now);
    if (leases[i] == nullptr) {
      return false;
    }
  }
  result = pipeline::ChargeResult{};
  result.live_admitted = true;
  result.shadow_admitted = charges.count > charges.live;
  for (std::size_t i = 0; i < charges.count; ++i) {
    LeaseTable::Lease& lease = *leases[i];
    lease.left -= charges.items[i].cost;
    // What this replica can still grant: Redis's remaining when the lease was taken, and what
    // is left of the lease.
    result.outcomes[i] = {.verdict = {.admitted = true, .hold = {}, .retry_after = {}},
                          .status = {.remaining = lease.status.remaining + lease.left,
                                     .reset = std::max(lease.taken_at + lease.status.reset - now,
                                                       limiter::Duration::zero())}};
  }
  return true;
}

bool RedisStore::waits_for_lease(Loop& loop, const pipeline::Decision& decision,
                                 const pipeline::Charges& charges, limiter::TimePoint now) {
  const limiter::TimePoint lease_now = simulated_now_.value_or(now);
  bool taking = false;
  for (std::size_t i = 0; i < charges.count; ++i) {
    const config::LimiterConfig& limiter = *decision.reports[charges.report[i]].limiter;
    if (limiter.lease == 0) {
      return false;
    }
    const std::uint64_t id = redis_key_id(limiter.name, *charges.options[i], charges.shared_key[i]);
    if (loop.leases->taking(id) == id) {
      taking = true;
    } else if (loop.leases->usable(id, charges.items[i].cost, lease_now) == nullptr) {
      return false;
    }
  }
  return taking;
}

bool RedisStore::top_ups(Loop& loop, const pipeline::Decision& decision,
                         const pipeline::Charges& charges, limiter::TimePoint now,
                         pipeline::Charges& topped, TopUps& added) {
  bool any = false;
  const limiter::TimePoint lease_now = simulated_now_.value_or(now);
  for (std::size_t i = 0; i < charges.count; ++i) {
    const config::LimiterConfig& limiter = *decision.reports[charges.report[i]].limiter;
    const limiter::Permits size = lease_size(limiter, *charges.options[i]);
    if (size == 0) {
      continue;
    }
    if (!loop.leases) {
      loop.leases = std::make_unique<LeaseTable>();
      if (!heartbeat_started_.exchange(true)) {
        lease_holders_ = loops_.size();
        net::co_spawn(loop.refreshed->get_executor(), heartbeat(loop), net::detached);
      }
    }
    const std::uint64_t id = redis_key_id(limiter.name, *charges.options[i], charges.shared_key[i]);
    std::uint64_t& taking = loop.leases->taking(id);
    if (loop.leases->usable(id, charges.items[i].cost, lease_now) == nullptr && taking != id) {
      taking = id;  // until grant()
      added[i] = size;
      any = true;
    }
  }
  if (any) {
    topped = charges;
    for (std::size_t i = 0; i < charges.count; ++i) {
      topped.items[i].cost += added[i];
    }
  }
  return any;
}

void RedisStore::grant(Loop& loop, const pipeline::Decision& decision,
                       const pipeline::Charges& charges, const TopUps& added, Decided& decided,
                       limiter::TimePoint now) {
  pipeline::ChargeResult& result = decided.result;
  const bool admitted = result.counted == pipeline::Counted::yes && result.live_admitted;
  const limiter::TimePoint lease_now = simulated_now_.value_or(now);
  for (std::size_t i = 0; i < charges.count; ++i) {
    if (added[i] == 0) {
      continue;
    }
    const config::LimiterConfig& limiter = *decision.reports[charges.report[i]].limiter;
    const std::uint64_t id = redis_key_id(limiter.name, *charges.options[i], charges.shared_key[i]);
    if (loop.leases->taking(id) == id) {
      loop.leases->taking(id) = 0;  // the next request may take one again
    }
    if (!admitted || (i >= charges.live && !result.shadow_admitted)) {
      continue;  // not taken
    }
    LeaseTable::Lease& lease = loop.leases->entry_for(id, lease_now);
    if (lease.left != 0 && lease_now < lease.until) {
      give_back(loop, lease);  // another key's, or this key's last one, too small or ended
    }
    limiter::Outcome& outcome = result.outcomes[i];
    lease.key = id;
    lease.left = added[i];
    lease.status = outcome.status;
    lease.taken_at = lease_now;
    lease.until = lease_until(*charges.options[i], outcome.status, lease_now);
    lease.redis_key.clear();
    append_redis_key(lease.redis_key, layout(), limiter.name, *charges.options[i],
                     charges.shared_key[i]);
    lease.options = *charges.options[i];
    lease.decided_at = decided.decided_at[i];
    lease.permit = result.store_permit;
    outcome.status.remaining += added[i];  // this replica holds them
    loop.leases_taken.add();
  }
  loop.leases_granted->cancel();  // requests that waited for these leases look again
}

void RedisStore::give_back(Loop& loop, LeaseTable::Lease& lease) {
  const limiter::Permits left = lease.left;
  lease.left = 0;
  const std::uint16_t index = options_.cluster ? loop.lane_of_slot[key_slot(lease.redis_key)] : 0;
  RedisConnection* connection =
      index == SlotMap::kNone || !functions_ ? nullptr : pick(loop, *loop.lanes[index]);
  if (connection == nullptr) {
    return;  // its permits stay taken until the window or bucket moves on
  }
  const std::array<RefundItem, 1> item{
      RefundItem{lease.redis_key, &lease.options, left, limiter::Duration::zero()}};
  net::co_spawn(connection->get_executor(),
                run_refund(connection->shared_from_this(),
                           refund_command(refund_function(), item, lease.permit, lease.decided_at,
                                          simulated_now_)),
                net::detached);
}

io::Awaitable<void> RedisStore::run_refund(std::shared_ptr<RedisConnection> connection,
                                           std::vector<std::string> command) {
  const std::vector<std::string_view> arguments(command.begin(), command.end());
  co_await connection->command(arguments, options_.timeout);
}

io::Awaitable<void> RedisStore::heartbeat(Loop& loop) {
  const std::string key = "{" + options_.prefix + "}lease-holders";
  std::vector<std::string> holders;  // "replica-loop"
  for (std::size_t i = 0; i < loops_.size(); ++i) {
    holders.push_back(std::to_string(permit_base_) + "-" + std::to_string(i));
  }
  io::Timer timer(co_await net::this_coro::executor);
  while (!loop.closed) {
    const std::uint16_t lane = options_.cluster ? loop.lane_of_slot[key_slot(key)] : 0;
    RedisConnection* picked = lane == SlotMap::kNone ? nullptr : pick(loop, *loop.lanes[lane]);
    if (picked != nullptr) {
      const auto connection = picked->shared_from_this();
      const auto now_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                              std::chrono::system_clock::now().time_since_epoch())
                              .count();
      // A replica that stops beating is forgotten after 3 beats.
      const std::string until =
          std::to_string(now_ms + 3 * std::chrono::milliseconds(kHeartbeat).count());
      const std::string gone = std::to_string(now_ms);
      std::vector<std::string_view> add{"ZADD", key};
      for (const std::string& holder : holders) {
        add.insert(add.end(), {until, holder});
      }
      const std::array<std::string_view, 4> trim{"ZREMRANGEBYSCORE", key, "-inf", gone};
      const std::array<std::string_view, 2> count{"ZCARD", key};
      co_await connection->command(add, options_.timeout);
      co_await connection->command(trim, options_.timeout);
      const RedisReply counted = co_await connection->command(count, options_.timeout);
      if (!counted.error && counted.value.kind == RespValue::Kind::integer) {
        lease_holders_ = static_cast<std::uint64_t>(
            std::max<long long>(static_cast<long long>(loops_.size()), counted.value.integer));
      }
    }
    timer.expires_after(kHeartbeat);
    co_await timer.async_wait(io::use_nothrow);
  }
}

io::Awaitable<void> RedisStore::give_back(std::size_t index) {
  Loop& loop = *loops_[index];
  if (!loop.leases) {
    co_return;
  }
  // One after the other, each awaited: the loop is about to stop.
  std::vector<std::pair<std::shared_ptr<RedisConnection>, std::vector<std::string>>> refunds;
  const limiter::TimePoint now = simulated_now_.value_or(limiter::SystemClock().now());
  loop.leases->for_each_held([&](LeaseTable::Lease& lease) {
    if (lease.until <= now) {
      lease.left = 0;  // ended: its permits no longer count where it was taken
      return;
    }
    const std::uint16_t lane = options_.cluster ? loop.lane_of_slot[key_slot(lease.redis_key)] : 0;
    RedisConnection* connection =
        lane == SlotMap::kNone || !functions_ ? nullptr : pick(loop, *loop.lanes[lane]);
    if (connection != nullptr) {
      const std::array<RefundItem, 1> item{
          RefundItem{lease.redis_key, &lease.options, lease.left, limiter::Duration::zero()}};
      refunds.emplace_back(
          connection->shared_from_this(),
          refund_command(refund_function(), item, lease.permit, lease.decided_at, simulated_now_));
    }
    lease.left = 0;
  });
  for (auto& [connection, command] : refunds) {
    co_await run_refund(connection, std::move(command));
  }
}

void RedisStore::remember_refusals(Loop& loop, const pipeline::Decision& decision,
                                   const pipeline::Charges& charges,
                                   const pipeline::ChargeResult& result, limiter::TimePoint now) {
  if (result.live_admitted) {
    return;
  }
  const auto ids = cache_ids(decision, charges);
  const limiter::TimePoint cache_now = simulated_now_.value_or(now);
  for (std::size_t i = 0; i < charges.live; ++i) {
    const limiter::Verdict& verdict = result.outcomes[i].verdict;
    if (!verdict.admitted && verdict.retry_after != limiter::Duration::max() &&
        charges.options[i]->algorithm != limiter::AlgorithmKind::concurrency) {
      loop.over_limit.remember(ids[i], charges.items[i].cost, cache_now, result.outcomes[i]);
    }
  }
}

io::Awaitable<pipeline::ChargeResult> RedisStore::charge(std::size_t index,
                                                         const pipeline::Decision& decision,
                                                         const pipeline::Charges& charges,
                                                         limiter::TimePoint now) {
  Loop& loop = *loops_[index];
  // Unique per request: the process's random base, a count per loop, the loop.
  const std::uint64_t permit = permit_base_ + (++loop.permits_issued << 16) + index;
  if (loop.leases && waits_for_lease(loop, decision, charges, now)) {
    // A lease it needs is being taken: wait for it rather than ask Redis meanwhile. (Any
    // call that took leases wakes the waiters; each looks whether its own came.)
    do {
      co_await loop.leases_granted->async_wait(io::use_nothrow);
    } while (waits_for_lease(loop, decision, charges, now));
    pipeline::ChargeResult result;
    if (answer_from_leases(loop, decision, charges, cache_ids(decision, charges),
                           simulated_now_.value_or(now), result)) {
      loop.lease_hits.add();
      co_return result;
    }
  }
  pipeline::Charges topped;
  TopUps added{};
  if (top_ups(loop, decision, charges, now, topped, added)) {
    Decided decided = co_await charge_in_redis(loop, decision, topped, permit, now, false);
    grant(loop, decision, charges, added, decided, now);
    if (decided.result.counted != pipeline::Counted::yes || decided.result.live_admitted) {
      co_return decided.result;
    }
    // Refused with the leases: near the limit, where leases are not worth their permits. The
    // request alone is decided exactly.
  }
  co_return (co_await charge_in_redis(loop, decision, charges, permit, now, true)).result;
}

io::Awaitable<RedisStore::Decided> RedisStore::charge_in_redis(
    Loop& loop, const pipeline::Decision& decision, const pipeline::Charges& charges,
    std::uint64_t permit, limiter::TimePoint now, bool remember) {
  BatchWaiter waiter{.decision = decision, .charges = charges, .permit = permit};
  LaneIndices lanes{};
  bool routed = false;
  for (int attempt = 0; attempt < 2; ++attempt) {
    routed = route(loop, charges, lanes);
    if (!routed) {
      break;
    }
    if (std::any_of(lanes.begin(), lanes.begin() + static_cast<std::ptrdiff_t>(charges.count),
                    [&](std::uint16_t lane) { return lane != lanes[0]; })) {
      Decided decided = co_await charge_across(loop, decision, charges, lanes, permit, now);
      if (remember) {
        remember_refusals(loop, decision, charges, decided.result, now);
      }
      co_return decided;
    }
    waiter.redirected = false;
    co_await wait_in_batch(loop, *loop.lanes[lanes[0]], waiter);
    if (!waiter.redirected) {
      break;
    }
    co_await refresh_slots(loop);  // the slot moved: ask the map, then its master
  }
  Decided decided;
  if (!waiter.decided) {
    if (waiter.redirected || !routed) {
      loop.errors.add();  // still misplaced: counted here, since call() did not
    }
    decided.result = fall_back(charges, now);
    co_return decided;
  }
  decided.result = waiter.result;
  decided.result.store_permit = waiter.permit;
  decided.decided_at.fill(waiter.decided_at);
  if (remember) {
    remember_refusals(loop, decision, charges, decided.result, now);
  }
  co_return decided;
}

io::Awaitable<void> RedisStore::decide_part(Loop& loop, Lane& lane, BatchWaiter& waiter,
                                            std::size_t& pending, io::Timer& done) {
  co_await wait_in_batch(loop, lane, waiter);
  if (--pending == 0) {
    done.cancel();
  }
}

io::Awaitable<RedisStore::Decided> RedisStore::charge_across(
    Loop& loop, const pipeline::Decision& decision, const pipeline::Charges& charges,
    const LaneIndices& lanes, std::uint64_t permit, limiter::TimePoint now) {
  // One part per lane, its charges in the request's order (live ones first).
  struct Part {
    std::uint16_t lane;
    pipeline::Charges charges;
    std::array<std::size_t, limiter::kMaxChargesPerRequest> index{};  ///< In the request.
  };
  std::vector<Part> parts;
  for (std::size_t i = 0; i < charges.count; ++i) {
    auto part =
        std::find_if(parts.begin(), parts.end(), [&](const Part& p) { return p.lane == lanes[i]; });
    if (part == parts.end()) {
      part = parts.insert(parts.end(), Part{.lane = lanes[i], .charges = {}});
    }
    pipeline::Charges& c = part->charges;
    part->index[c.count] = i;
    c.items[c.count] = charges.items[i];
    c.options[c.count] = charges.options[i];
    c.report[c.count] = charges.report[i];
    c.shared_key[c.count] = charges.shared_key[i];
    c.live += i < charges.live ? 1 : 0;
    ++c.count;
  }
  std::deque<BatchWaiter> waiters;
  const auto executor = co_await net::this_coro::executor;
  io::Timer done(executor, io::Timer::time_point::max());
  std::size_t pending = parts.size();
  for (const Part& part : parts) {
    BatchWaiter& waiter = waiters.emplace_back(
        BatchWaiter{.decision = decision, .charges = part.charges, .permit = permit});
    net::co_spawn(executor, decide_part(loop, *loop.lanes[part.lane], waiter, pending, done),
                  net::detached);
  }
  if (pending > 0) {
    co_await done.async_wait(io::use_nothrow);
  }
  // All or nothing: the live charges admit the request only if every part's did; the shadow
  // ones are then counted only if every part's shadow ones admitted too.
  bool decided = true;
  bool live = true;
  bool shadow = true;
  for (const BatchWaiter& waiter : waiters) {
    decided = decided && waiter.decided;
    live = live && waiter.result.live_admitted;
    shadow =
        shadow && (waiter.charges.count == waiter.charges.live || waiter.result.shadow_admitted);
  }
  Decided answer;
  pipeline::ChargeResult& result = answer.result;
  result.store_permit = permit;
  result.live_admitted = decided && live;
  result.shadow_admitted = result.live_admitted && charges.count > charges.live && shadow;
  for (std::size_t p = 0; p < parts.size(); ++p) {
    BatchWaiter& waiter = waiters[p];
    if (waiter.decided) {
      // Takes back what this part committed that the whole request may not keep; the statuses
      // of those charges become the refunded ones.
      co_await refund(loop, *loop.lanes[parts[p].lane],
                      refund_call(refund_function(), layout(), decision, waiter.charges,
                                  waiter.result, !result.live_admitted, !result.shadow_admitted,
                                  permit, waiter.decided_at, simulated_now_),
                      waiter.result);
    }
    for (std::size_t j = 0; j < waiter.charges.count; ++j) {
      const bool is_live = j < waiter.charges.live;
      // Shadow limiters of a refused request are not evaluated.
      result.outcomes[parts[p].index[j]] =
          is_live || result.live_admitted ? waiter.result.outcomes[j] : limiter::Outcome{};
      answer.decided_at[parts[p].index[j]] = waiter.decided_at;
    }
  }
  if (!decided) {
    answer.result = fall_back(charges, now);
  }
  co_return answer;
}

io::Awaitable<void> RedisStore::refund(Loop& loop, Lane& lane, RefundCall call,
                                       pipeline::ChargeResult& result) {
  if (call.charges.empty()) {
    co_return;
  }
  RedisConnection* picked = pick(loop, lane);
  if (picked == nullptr) {
    co_return;  // its permits stay taken until their window or bucket moves on
  }
  const std::shared_ptr<RedisConnection> connection = picked->shared_from_this();
  const std::vector<std::string_view> arguments(call.command.begin(), call.command.end());
  const RedisReply reply = co_await connection->command(arguments, options_.timeout);
  if (reply.error || !read_refund(reply.value, call, result)) {
    spdlog::debug("Redis store at {}: a refund failed ({})", config::redact_url(lane.node.url),
                  reason(reply));
    co_return;
  }
  loop.refunds.add();
}

void RedisStore::release(std::size_t index, const pipeline::Decision& decision) {
  if (decision.permit_count == 0) {
    return;
  }
  if (decision.store_permit == 0) {
    pipeline::Pipeline::release_locally(decision);  // `on_error: local` took them from memory
    return;
  }
  send_releases(*loops_[index],
                {decision.permits.begin(),
                 decision.permits.begin() + static_cast<std::ptrdiff_t>(decision.permit_count)},
                decision.store_permit);
}

bool RedisStore::available() const {
  const std::scoped_lock lock(nodes_mutex_);
  return std::none_of(nodes_.begin(), nodes_.end(),
                      [](const Node& node) { return node.serving > 0 && node.breaker.is_open(); });
}

std::optional<StoreHealth> RedisStore::health() const {
  return StoreHealth{.name = "redis",
                     .available = available(),
                     .errors = errors(),
                     .cached_refusals = cached_refusals(),
                     .calls = summed(&Loop::calls),
                     .requests_in_calls = summed(&Loop::requests_in_calls),
                     .refunds = refunds(),
                     .lease_hits = lease_hits(),
                     .lease_holders = lease_holders()};
}

std::uint64_t RedisStore::summed(telemetry::LoopCounter Loop::*counter) const noexcept {
  std::uint64_t total = 0;
  for (const auto& loop : loops_) {
    total += ((*loop).*counter).value();
  }
  return total;
}

std::uint64_t RedisStore::errors() const noexcept { return summed(&Loop::errors); }

std::uint64_t RedisStore::cached_refusals() const noexcept {
  return summed(&Loop::cached_refusals);
}

std::uint64_t RedisStore::lease_hits() const noexcept { return summed(&Loop::lease_hits); }

std::uint64_t RedisStore::leases_taken() const noexcept { return summed(&Loop::leases_taken); }

std::uint64_t RedisStore::refunds() const noexcept { return summed(&Loop::refunds); }

std::size_t RedisStore::masters(std::size_t index) const {
  const Loop& loop = *loops_[index];
  return static_cast<std::size_t>(std::count_if(loop.lanes.begin(), loop.lanes.end(),
                                                [](const auto& lane) { return lane->serving; }));
}

}  // namespace sluice::store::redis
