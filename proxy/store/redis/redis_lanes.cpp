#include "proxy/store/redis/redis_lanes.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <array>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>

#include "config/url.hpp"

namespace sluice::store::redis {
namespace {

/// Backoff between reconnection attempts: doubling, capped so that a Redis that comes back is
/// found again within a second.
constexpr std::chrono::milliseconds kFirstBackoff{50};
constexpr std::chrono::milliseconds kMaxBackoff{400};

/// Connecting and loading the scripts may take longer than a decision.
constexpr limiter::Duration kMinConnectTimeout = std::chrono::seconds(1);

}  // namespace

limiter::Duration RedisLanes::connect_timeout() const noexcept {
  return std::max(options_.timeout, kMinConnectTimeout);
}

std::size_t RedisLanes::serving() const noexcept {
  return static_cast<std::size_t>(
      std::count_if(lanes_.begin(), lanes_.end(), [](const auto& lane) { return lane->serving; }));
}

std::uint16_t RedisLanes::lane_to(RedisNode& node, bool serving) {
  const auto known = std::find_if(lanes_.begin(), lanes_.end(),
                                  [&](const auto& lane) { return &lane->node == &node; });
  if (known != lanes_.end()) {
    return static_cast<std::uint16_t>(known - lanes_.begin());
  }
  Lane& lane = *lanes_.emplace_back(std::make_unique<Lane>(node, connections_));
  lane.serving = serving;
  if (serving) {
    ++node.serving;
  }
  return static_cast<std::uint16_t>(lanes_.size() - 1);
}

io::Awaitable<std::shared_ptr<RedisConnection>> RedisLanes::connect(RedisNode& node) {
  auto connection = co_await RedisConnection::open(node.endpoint, node.url, connect_timeout());
  // On every connection: a Redis that restarted has forgotten the code.
  std::string why;
  if (!co_await code_.load(*connection, connect_timeout(), why)) {
    connection->close();
    throw RedisError("Redis at " + config::redact_url(node.url) +
                     ": loading the decision code failed: " + why);
  }
  co_return connection;
}

io::Awaitable<void> RedisLanes::connect(Lane& lane) {
  for (auto& connection : lane.connections) {
    connection = co_await connect(lane.node);
  }
}

io::Awaitable<void> RedisLanes::start_serving(Lane& lane, bool connect_now) {
  lane.serving = true;
  ++lane.node.serving;
  if (connect_now) {
    co_await connect(lane);
    co_return;
  }
  const auto executor = co_await net::this_coro::executor;
  for (std::size_t slot = 0; slot < lane.connections.size(); ++slot) {
    net::co_spawn(executor, reconnect(lane, slot), net::detached);
  }
}

void RedisLanes::stop_serving(Lane& lane) {
  lane.serving = false;
  --lane.node.serving;
  for (auto& connection : lane.connections) {
    if (connection) {
      connection->close();
      connection.reset();
    }
  }
}

void RedisLanes::close() {
  closed_ = true;
  for (auto& lane : lanes_) {
    for (auto& connection : lane->connections) {
      if (connection) {
        connection->close();
        connection.reset();
      }
    }
  }
}

RedisConnection* RedisLanes::pick(Lane& lane) {
  const std::size_t count = lane.connections.size();
  for (std::size_t tried = 0; tried < count; ++tried) {
    const std::size_t slot = lane.next++ % count;
    const auto& connection = lane.connections[slot];
    if (connection && !connection->broken()) {
      return connection.get();
    }
    if (connection) {
      replace(lane, slot);
    }
  }
  return nullptr;
}

void RedisLanes::replace(Lane& lane, std::size_t slot) {
  auto& connection = lane.connections[slot];
  const auto executor = connection->get_executor();
  connection->close();
  connection.reset();
  net::co_spawn(executor, reconnect(lane, slot), net::detached);
  if (follower_ != nullptr) {
    net::co_spawn(executor, follower_->refresh_slots(), net::detached);  // a failover, perhaps
  }
}

void RedisLanes::replace_if_lost(Lane& lane, const std::shared_ptr<RedisConnection>& connection,
                                 boost::system::error_code error) {
  const bool backed_up = error == boost::system::errc::no_buffer_space;
  if ((error && error != beast::error::timeout && !backed_up) ||
      connection->timeouts_in_a_row() >= kTimeoutsBeforeReplacing) {
    for (std::size_t slot = 0; slot < lane.connections.size(); ++slot) {
      if (lane.connections[slot] == connection) {
        replace(lane, slot);  // the connection broke, or leads nowhere
      }
    }
  }
}

io::Awaitable<void> RedisLanes::reconnect(Lane& lane, std::size_t slot) {
  auto backoff = std::chrono::milliseconds(kFirstBackoff);
  io::Timer timer(co_await net::this_coro::executor);
  while (!closed_ && lane.serving && !lane.connections[slot]) {
    try {
      auto connection = co_await connect(lane.node);
      if (closed_ || !lane.serving || lane.connections[slot]) {
        connection->close();
      } else {
        lane.connections[slot] = std::move(connection);
      }
      co_return;
    } catch (const std::exception&) {
      // Still down (RedisError), or the socket refused an option: try again later.
    }
    if (follower_ != nullptr) {
      co_await follower_->refresh_slots();  // a replica may have taken over
    }
    timer.expires_after(backoff);
    co_await timer.async_wait(io::use_nothrow);
    backoff = std::min(backoff * 2, std::chrono::milliseconds(kMaxBackoff));
  }
}

void RedisLanes::failed(Lane& lane, std::string_view why, std::size_t requests) {
  errors_.add(requests);
  if (lane.node.breaker.failed(CircuitBreaker::Clock::now())) {
    spdlog::warn("Redis store at {} failed ({}); requests follow on_error: {}",
                 config::redact_url(lane.node.url), why, name_of(options_.on_error));
  }
}

void RedisLanes::answered(Lane& lane, std::uint64_t ticket) {
  if (lane.node.breaker.succeeded(ticket)) {
    spdlog::info("Redis store at {} answers again", config::redact_url(lane.node.url));
  }
}

io::Awaitable<void> RedisLanes::probe() {
  for (std::size_t i = 0; i < lanes_.size(); ++i) {
    Lane& lane = *lanes_[i];
    RedisConnection* picked = lane.serving && lane.node.breaker.is_open() ? pick(lane) : nullptr;
    if (picked == nullptr) {
      continue;
    }
    const std::shared_ptr<RedisConnection> connection = picked->shared_from_this();
    const std::array<std::string_view, 1> ping{"PING"};
    const std::uint64_t ticket = lane.node.breaker.ticket();
    const RedisReply pong = co_await connection->command(ping, options_.timeout);
    if (!pong.error && !pong.value.is_error()) {
      answered(lane, ticket);
    }
  }
}

}  // namespace sluice::store::redis
