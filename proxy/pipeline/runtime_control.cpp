#include "proxy/pipeline/runtime_control.hpp"

#include <algorithm>

#include "config/runtime_parameters.hpp"
#include "limiter/make_limiter.hpp"
#include "proxy/pipeline/request_key.hpp"

namespace sluice::pipeline {
namespace {

std::atomic<std::uint64_t> next_control_id{1};

/// A key as written ("1.2.3.4+gold") in the form build_key produces.
std::string internal_key(std::string_view written) {
  std::string text(written);
  std::replace(text.begin(), text.end(), '+', kKeyPartSeparator);
  return text;
}

template <class Entry>
void drop_expired(std::vector<Entry>& entries, limiter::TimePoint now) {
  std::erase_if(entries, [now](const Entry& entry) { return entry.expires_at <= now; });
}

}  // namespace

void RuntimeSnapshot::lookup_key(std::string_view limiter, std::string_view internal,
                                 std::string& out) {
  out.assign(limiter);
  out += '\n';  // never in a limiter's name
  out += internal;
}

const RuntimeSnapshot::Override* RuntimeSnapshot::override_for(std::string_view limiter,
                                                               std::string_view internal,
                                                               limiter::TimePoint now) const {
  if (by_key.empty()) {
    return nullptr;
  }
  thread_local std::string lookup;  // keeps its capacity: no allocation per request
  lookup_key(limiter, internal, lookup);
  const auto found = by_key.find(std::string_view(lookup));
  if (found == by_key.end()) {
    return nullptr;
  }
  const Override& override = overrides[found->second];
  return override.instance && now < override.entry.expires_at ? &override : nullptr;
}

std::optional<limiter::Duration> RuntimeSnapshot::banned_for(
    const IpAddress& client, limiter::TimePoint now) const noexcept {
  for (const BanEntry& ban : bans) {
    if (ban.ip == client && now < ban.expires_at) {
      return ban.expires_at - now;
    }
  }
  return std::nullopt;
}

RuntimeControl::RuntimeControl()
    : id_(next_control_id.fetch_add(1)), current_(std::make_shared<const RuntimeSnapshot>()) {}

std::optional<limiter::LimiterOptions> RuntimeControl::options_for(
    const OverrideEntry& entry, const config::LimiterConfig& limiter,
    std::vector<std::string>& problems) {
  return config::read_runtime_parameters(entry.parameters, limiter.options, problems);
}

void RuntimeControl::set_override(OverrideEntry entry, const config::ProxyConfig& config,
                                  limiter::TimePoint now) {
  const std::lock_guard lock(mutex_);
  std::erase_if(override_entries_, [&entry](const OverrideEntry& old) {
    return old.limiter == entry.limiter && old.key == entry.key;
  });
  override_entries_.push_back(std::move(entry));
  publish(config, now);
}

bool RuntimeControl::remove_override(std::string_view limiter, std::string_view key,
                                     const config::ProxyConfig& config, limiter::TimePoint now) {
  const std::lock_guard lock(mutex_);
  drop_expired(override_entries_, now);
  const std::size_t removed = std::erase_if(override_entries_, [&](const OverrideEntry& old) {
    return old.limiter == limiter && old.key == key;
  });
  publish(config, now);
  return removed > 0;
}

void RuntimeControl::set_ban(BanEntry entry, const config::ProxyConfig& config,
                             limiter::TimePoint now) {
  const std::lock_guard lock(mutex_);
  std::erase_if(ban_entries_, [&entry](const BanEntry& old) { return old.ip == entry.ip; });
  ban_entries_.push_back(entry);
  publish(config, now);
}

bool RuntimeControl::remove_ban(const IpAddress& ip, const config::ProxyConfig& config,
                                limiter::TimePoint now) {
  const std::lock_guard lock(mutex_);
  drop_expired(ban_entries_, now);
  const std::size_t removed =
      std::erase_if(ban_entries_, [&ip](const BanEntry& old) { return old.ip == ip; });
  publish(config, now);
  return removed > 0;
}

void RuntimeControl::replace(std::vector<OverrideEntry> overrides, std::vector<BanEntry> bans,
                             const config::ProxyConfig& config, limiter::TimePoint now) {
  const std::lock_guard lock(mutex_);
  drop_expired(overrides, now);
  drop_expired(bans, now);
  if (overrides == override_entries_ && bans == ban_entries_ && published_for_ == &config) {
    return;
  }
  override_entries_ = std::move(overrides);
  ban_entries_ = std::move(bans);
  publish(config, now);
}

void RuntimeControl::refresh(const config::ProxyConfig& config, limiter::TimePoint now,
                             bool reloaded) {
  const std::lock_guard lock(mutex_);
  const std::size_t before = override_entries_.size() + ban_entries_.size();
  drop_expired(override_entries_, now);
  drop_expired(ban_entries_, now);
  if (reloaded || override_entries_.size() + ban_entries_.size() != before) {
    publish(config, now);
  }
}

std::vector<OverrideEntry> RuntimeControl::overrides(limiter::TimePoint now) const {
  const std::lock_guard lock(mutex_);
  std::vector<OverrideEntry> in_force = override_entries_;
  drop_expired(in_force, now);
  return in_force;
}

std::vector<BanEntry> RuntimeControl::bans(limiter::TimePoint now) const {
  const std::lock_guard lock(mutex_);
  std::vector<BanEntry> in_force = ban_entries_;
  drop_expired(in_force, now);
  return in_force;
}

void RuntimeControl::publish(const config::ProxyConfig& config, limiter::TimePoint now) {
  drop_expired(override_entries_, now);
  drop_expired(ban_entries_, now);
  const auto steady_now = std::chrono::steady_clock::now();
  // Instances in force until now, to be kept where the same override still holds.
  std::vector<std::pair<std::string, std::shared_ptr<OverrideInstance>>> old;
  for (const RuntimeSnapshot::Override& override : current_->overrides) {
    if (override.instance) {
      std::string lookup;
      RuntimeSnapshot::lookup_key(override.entry.limiter, internal_key(override.entry.key), lookup);
      old.emplace_back(std::move(lookup), override.instance);
    }
  }
  auto next = std::make_shared<RuntimeSnapshot>();
  for (const OverrideEntry& entry : override_entries_) {
    std::string lookup;
    RuntimeSnapshot::lookup_key(entry.limiter, internal_key(entry.key), lookup);
    std::shared_ptr<OverrideInstance> instance;
    std::vector<std::string> problems;
    const config::LimiterConfig* limiter = config.limiter_named(entry.limiter);
    const std::optional<limiter::LimiterOptions> options =
        limiter ? options_for(entry, *limiter, problems) : std::nullopt;
    if (options) {
      for (auto& [text, kept] : old) {
        if (kept && text == lookup && kept->options == *options) {
          instance = std::move(kept);
        }
      }
      if (!instance) {
        instance = std::make_shared<OverrideInstance>(
            OverrideInstance{limiter->options, *options, limiter::make_limiter(*options)});
      }
    }
    next->by_key[lookup] = next->overrides.size();
    next->overrides.push_back({entry, std::move(instance)});
  }
  next->bans = ban_entries_;
  // What is no longer in force waits for the requests that may still hold it.
  for (auto& [text, instance] : old) {
    if (instance) {
      retired_.emplace_back(std::move(instance), steady_now);
    }
  }
  std::erase_if(retired_, [steady_now](const auto& retired) {
    return steady_now - retired.second > kRetiredFor;
  });
  current_ = std::move(next);
  published_for_ = &config;
  any_.store(!override_entries_.empty() || !ban_entries_.empty(), std::memory_order_release);
  version_.fetch_add(1, std::memory_order_release);
}

const RuntimeSnapshot& RuntimeControl::snapshot() const {
  struct Held {
    std::uint64_t control = 0;
    std::uint64_t version = 0;
    std::shared_ptr<const RuntimeSnapshot> snapshot;
  };
  thread_local Held held;
  const std::uint64_t version = version_.load(std::memory_order_acquire);
  if (held.control != id_ || held.version != version || !held.snapshot) {
    const std::lock_guard lock(mutex_);
    held = {id_, version_.load(std::memory_order_relaxed), current_};
  }
  return *held.snapshot;
}

}  // namespace sluice::pipeline
