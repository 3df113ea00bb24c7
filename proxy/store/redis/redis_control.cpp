// RedisStore's runtime control (SPEC §10): the shared tables of overrides and bans, and keys
// forgotten for every replica.
#include <boost/asio/post.hpp>
#include <charconv>
#include <string>

#include "config/url.hpp"
#include "proxy/store/redis/redis_loop.hpp"
#include "proxy/store/redis/redis_store.hpp"

namespace sluice::store::redis {
namespace {

/// Forgotten keys are noted this long: enough for every replica's next look (about a second).
constexpr std::string_view kForgottenKeptMs = "60000";

std::string decimal(std::uint64_t value) { return std::to_string(value); }

template <class Number>
Number number_in(const std::string& text) {
  Number value = 0;
  std::from_chars(text.data(), text.data() + text.size(), value);
  return value;
}

}  // namespace

std::string RedisStore::control_key(std::string_view table) const {
  // As the counters' keys: on one Redis, the whole prefix is the hash tag.
  std::string key = options_.cluster ? options_.prefix : "{" + options_.prefix + "}";
  key += "control:";
  key += table;
  return key;
}

io::Awaitable<RespValue> RedisStore::control_command(std::size_t index,
                                                     std::string_view routing_key,
                                                     std::span<const std::string_view> arguments) {
  RedisLoop& loop = *loops_[index];
  const std::uint16_t lane_index = loop.routing.lane_of(routing_key);
  RedisConnection* picked =
      lane_index == SlotMap::kNone ? nullptr : loop.lanes.pick(loop.lanes[lane_index]);
  if (picked == nullptr) {
    throw StoreError("Redis store at " + config::redact_url(options_.url) + " is not connected");
  }
  const std::shared_ptr<RedisConnection> connection = picked->shared_from_this();
  RedisReply reply = co_await connection->command(arguments, loop.lanes.connect_timeout());
  if (reply.error || reply.value.is_error()) {
    throw StoreError("Redis store at " + config::redact_url(options_.url) + ": " +
                     reason_of(reply));
  }
  co_return std::move(reply.value);
}

io::Awaitable<bool> RedisStore::write_control(std::size_t loop, std::string_view table,
                                              std::string_view field,
                                              std::optional<std::string_view> value) {
  const std::string key = control_key(table);
  if (value) {
    const std::array<std::string_view, 4> set{"HSET", key, field, *value};
    const RespValue added = co_await control_command(loop, key, set);
    co_return added.integer == 0;  // 0 fields added: it replaced one
  }
  const std::array<std::string_view, 3> del{"HDEL", key, field};
  const RespValue removed = co_await control_command(loop, key, del);
  co_return removed.integer > 0;
}

io::Awaitable<std::vector<std::pair<std::string, std::string>>> RedisStore::read_control(
    std::size_t loop, std::string_view table) {
  const std::string key = control_key(table);
  const std::array<std::string_view, 2> all{"HGETALL", key};
  RespValue reply = co_await control_command(loop, key, all);
  std::vector<std::pair<std::string, std::string>> entries;
  for (std::size_t i = 0; i + 1 < reply.elements.size(); i += 2) {
    entries.emplace_back(std::move(reply.elements[i].text), std::move(reply.elements[i + 1].text));
  }
  co_return entries;
}

io::Awaitable<void> RedisStore::forget(std::size_t loop, std::string_view limiter,
                                       std::span<const limiter::LimiterOptions> definitions,
                                       limiter::KeyHash shared_key) {
  if (definitions.empty()) {
    co_return;
  }
  // Every definition of one key shares its slot (the key's hash is the tag): one DEL.
  std::vector<std::string> keys;
  std::vector<std::uint64_t> ids;
  for (const limiter::LimiterOptions& definition : definitions) {
    append_redis_key(keys.emplace_back(), layout_of(options_), limiter, definition, shared_key);
    ids.push_back(redis_key_id(limiter, definition, shared_key));
  }
  std::vector<std::string_view> del{"DEL"};
  del.insert(del.end(), keys.begin(), keys.end());
  co_await control_command(loop, keys.front(), del);
  forget_cached(ids);
  // Other replicas learn of it from a note numbered in order, read by follow_forgotten().
  const std::string notes = control_key("forgotten");
  const std::string counter = control_key("forgotten-count");
  const std::array<std::string_view, 2> next{"INCR", counter};
  const RespValue counted = co_await control_command(loop, counter, next);
  const std::string number = decimal(static_cast<std::uint64_t>(counted.integer));
  for (const std::uint64_t id : ids) {
    const std::string field = decimal(id);
    const std::array<std::string_view, 4> note{"HSET", notes, field, number};
    co_await control_command(loop, notes, note);
  }
  const std::array<std::string_view, 3> expire{"PEXPIRE", notes, kForgottenKeptMs};
  co_await control_command(loop, notes, expire);
}

io::Awaitable<void> RedisStore::follow_forgotten(std::size_t loop) {
  const std::vector<std::pair<std::string, std::string>> notes =
      co_await read_control(loop, "forgotten");
  const long long seen = forgotten_seen_.load(std::memory_order_relaxed);
  long long newest = seen;
  std::vector<std::uint64_t> ids;
  for (const auto& [field, number] : notes) {
    const auto noted = number_in<long long>(number);
    if (noted > seen) {
      ids.push_back(number_in<std::uint64_t>(field));
      newest = std::max(newest, noted);
    }
  }
  forgotten_seen_.store(newest, std::memory_order_relaxed);
  forget_cached(ids);
}

void RedisStore::forget_cached(const std::vector<std::uint64_t>& ids) {
  if (ids.empty()) {
    return;
  }
  for (const std::unique_ptr<RedisLoop>& loop : loops_) {
    if (loop->executor) {
      net::post(*loop->executor, [&cache = loop->over_limit, ids] {
        for (const std::uint64_t id : ids) {
          cache.forget(id);
        }
      });
    }
  }
}

}  // namespace sluice::store::redis
