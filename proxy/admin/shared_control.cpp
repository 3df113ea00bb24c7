#include "proxy/admin/shared_control.hpp"

#include <spdlog/spdlog.h>

#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>
#include <chrono>

namespace sluice::admin {
namespace {

namespace json = boost::json;

/// How often the shared tables are read: overrides, bans and resets reach every replica within
/// this long and a round trip, well within the second promised (three small reads per period).
constexpr std::chrono::milliseconds kFollowEvery{500};
/// How long after it expired an entry is deleted from the shared tables.
constexpr std::chrono::hours kDeletedAfter{1};

std::int64_t epoch_ms(limiter::TimePoint at) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(at.time_since_epoch()).count();
}

limiter::TimePoint from_epoch_ms(std::int64_t ms) {
  return limiter::TimePoint(std::chrono::milliseconds(ms));
}

/// The object of `text`, and its `expires_at`; nullopt when it is not one.
std::optional<std::pair<json::object, limiter::TimePoint>> read_value(std::string_view text) {
  boost::system::error_code error;
  json::value value = json::parse(text, error);
  if (error || !value.is_object()) {
    return std::nullopt;
  }
  const json::value* expires = value.as_object().if_contains("expires_at");
  if (expires == nullptr || !expires->is_int64()) {
    return std::nullopt;
  }
  const limiter::TimePoint at = from_epoch_ms(expires->as_int64());
  return std::pair(std::move(value.as_object()), at);
}

}  // namespace

std::string override_field(const pipeline::OverrideEntry& entry) {
  return entry.limiter + '\n' + entry.key;
}

std::string override_value(const pipeline::OverrideEntry& entry) {
  json::object value{{"parameters", json::parse(entry.parameters)},
                     {"expires_at", epoch_ms(entry.expires_at)}};
  return json::serialize(value);
}

std::optional<pipeline::OverrideEntry> override_from(std::string_view field,
                                                     std::string_view value) {
  const std::size_t newline = field.find('\n');
  auto read = read_value(value);
  if (newline == std::string_view::npos || !read) {
    return std::nullopt;
  }
  const json::value* parameters = read->first.if_contains("parameters");
  if (parameters == nullptr || !parameters->is_object()) {
    return std::nullopt;
  }
  return pipeline::OverrideEntry{.limiter = std::string(field.substr(0, newline)),
                                 .key = std::string(field.substr(newline + 1)),
                                 .parameters = json::serialize(*parameters),
                                 .expires_at = read->second};
}

std::string ban_value(const pipeline::BanEntry& entry) {
  return json::serialize(json::object{{"expires_at", epoch_ms(entry.expires_at)}});
}

std::optional<pipeline::BanEntry> ban_from(std::string_view field, std::string_view value) {
  const std::optional<pipeline::IpAddress> ip = pipeline::IpAddress::parse(field);
  const auto read = read_value(value);
  if (!ip || !read) {
    return std::nullopt;
  }
  return pipeline::BanEntry{.ip = *ip, .expires_at = read->second};
}

io::Awaitable<void> pull_shared_control(http::LoopContext& context) {
  store::Store& store = *context.proxy.store;
  if (!store.shares_control()) {
    co_return;
  }
  const auto override_rows = co_await store.read_control(context.index, "overrides");
  const auto ban_rows = co_await store.read_control(context.index, "bans");
  const limiter::TimePoint now = context.proxy.clock.now();
  // Entries long expired are deleted, so that the tables do not grow with every key ever
  // overridden (the hour leaves no doubt that nobody is writing that entry again right now).
  std::vector<std::pair<std::string_view, std::string>> stale;
  std::vector<pipeline::OverrideEntry> overrides;
  for (const auto& [field, value] : override_rows) {
    if (auto entry = override_from(field, value)) {
      if (now - entry->expires_at > kDeletedAfter) {
        stale.emplace_back("overrides", field);
      }
      overrides.push_back(std::move(*entry));
    }
  }
  std::vector<pipeline::BanEntry> bans;
  for (const auto& [field, value] : ban_rows) {
    if (auto entry = ban_from(field, value)) {
      if (now - entry->expires_at > kDeletedAfter) {
        stale.emplace_back("bans", field);
      }
      bans.push_back(*entry);
    }
  }
  for (const auto& [table, field] : stale) {
    co_await store.write_control(context.index, table, field, std::nullopt);
  }
  // The tables' order is Redis's: sorted, equal contents compare equal and publish nothing.
  std::sort(overrides.begin(), overrides.end(), [](const auto& a, const auto& b) {
    return std::tie(a.limiter, a.key) < std::tie(b.limiter, b.key);
  });
  std::sort(bans.begin(), bans.end(),
            [](const auto& a, const auto& b) { return a.ip.bytes < b.ip.bytes; });
  const std::shared_ptr<const live::Generation> generation = context.generations.get();
  context.proxy.control->replace(std::move(overrides), std::move(bans), *generation->config, now);
}

io::Awaitable<void> follow_runtime_control(http::LoopContext& context) {
  io::Timer timer(co_await net::this_coro::executor);
  std::uint64_t version = context.proxy.live.version();
  bool failing = false;
  for (bool first = true;; first = false) {
    if (!first) {  // at start at once: a replica that starts obeys what the others were told
      timer.expires_after(kFollowEvery);
      if (auto [stopped] = co_await timer.async_wait(io::use_nothrow); stopped) {
        co_return;
      }
    }
    const std::shared_ptr<const live::Generation> generation = context.generations.get();
    const bool reloaded = context.proxy.live.version() != version;
    version = context.proxy.live.version();
    context.proxy.control->refresh(*generation->config, context.proxy.clock.now(), reloaded);
    try {
      co_await pull_shared_control(context);
      co_await context.proxy.store->follow_forgotten(context.index);
      if (failing) {
        spdlog::info("runtime control: the shared store answers again");
      }
      failing = false;
    } catch (const store::StoreError& error) {
      if (!failing) {  // once per outage, not every second
        spdlog::warn("runtime control: cannot read the shared store: {}", error.what());
      }
      failing = true;
    }
  }
}

}  // namespace sluice::admin
