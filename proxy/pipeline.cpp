#include "proxy/pipeline.hpp"

#include <algorithm>
#include <string>

#include "limiter/key_hash.hpp"
#include "limiter/make_limiter.hpp"
#include "proxy/request_key.hpp"

namespace sluice::proxy {
namespace {

using limiter::Charge;
using limiter::kMaxChargesPerRequest;

/// An override value as written ("1.2.3.4+gold") in the form build_key produces.
std::string internal_key_text(std::string written) {
  std::replace(written.begin(), written.end(), '+', kKeyPartSeparator);
  return written;
}

/// Charges a set of limiters all or nothing and files each outcome in its report.
limiter::Decision charge(std::span<const Charge> charges, std::span<const std::size_t> report_of,
                         limiter::TimePoint now, Decision& decision) {
  std::array<limiter::Outcome, kMaxChargesPerRequest> outcomes{};
  const limiter::Decision result = limiter::decide(charges, now, outcomes);
  for (std::size_t i = 0; i < charges.size(); ++i) {
    LimiterReport& report = decision.reports[report_of[i]];
    report.verdict = outcomes[i].verdict;
    report.status = outcomes[i].status;
  }
  return result;
}

void keep_permits(std::span<const Charge> charges, std::span<const std::size_t> report_of,
                  Decision& decision) {
  for (std::size_t i = 0; i < charges.size(); ++i) {
    if (decision.reports[report_of[i]].limiter->options.algorithm ==
        limiter::AlgorithmKind::concurrency) {
      decision.permits[decision.permit_count++] = {charges[i].limiter, charges[i].key,
                                                   charges[i].cost};
    }
  }
}

/// Whether two limiter definitions key requests alike, so their counts mean the same thing.
bool same_keys(const config::LimiterConfig& a, const config::LimiterConfig& b) {
  return a.key.text == b.key.text && a.ipv6_prefix == b.ipv6_prefix;
}

bool same_ban(const config::BanOptions& a, const config::BanOptions& b) {
  return a.after == b.after && a.within == b.within && a.duration == b.duration;
}

}  // namespace

std::string_view name_of(Outcome outcome) noexcept {
  switch (outcome) {
    case Outcome::allowed:
      return "allowed";
    case Outcome::delayed:
      return "delayed";
    case Outcome::limited:
      return "limited";
    case Outcome::denied:
      return "denied";
    case Outcome::no_route:
      return "no_route";
  }
  return "unknown";
}

Pipeline::Pipeline(const config::ProxyConfig& config, const Pipeline* previous)
    : config_(config), routes_(config.routes) {
  for (const config::Cidr& network : config.deny) {
    deny_.insert(network);
  }
  if (config.ban) {
    if (previous && previous->ban_ && same_ban(*previous->config_.ban, *config.ban) &&
        previous->config_.store.max_keys == config.store.max_keys) {
      ban_ = previous->ban_;
      ++kept_state_;
    } else {
      ban_ = std::make_shared<BanList>(*config.ban, config.store.max_keys);
    }
  }
  for (const config::LimiterConfig& limiter : config.limiters) {
    const LimiterSlot* before = nullptr;
    if (previous) {
      for (const LimiterSlot& old : previous->limiters_) {
        if (old.config->name == limiter.name && same_keys(*old.config, limiter)) {
          before = &old;
        }
      }
    }
    LimiterSlot slot{&limiter, nullptr, {}};
    if (before && before->config->options == limiter.options) {
      slot.main = before->main;
      ++kept_state_;
    } else {
      slot.main = limiter::make_limiter(limiter.options);
    }
    for (const config::Override& override : limiter.overrides) {
      std::string value = internal_key_text(override.value);
      std::shared_ptr<limiter::Limiter> instance;
      if (before) {
        for (std::size_t i = 0; i < before->overrides.size(); ++i) {
          if (before->overrides[i].first == value &&
              before->config->overrides[i].options == override.options) {
            instance = before->overrides[i].second;
            ++kept_state_;
          }
        }
      }
      slot.overrides.emplace_back(std::move(value),
                                  instance ? instance : limiter::make_limiter(override.options));
    }
    limiters_.push_back(std::move(slot));
  }
  for (const config::Route& route : config.routes) {
    std::vector<std::size_t>& indices = route_limiters_.emplace_back();
    for (const std::string& name : route.limiters) {
      for (std::size_t i = 0; i < limiters_.size(); ++i) {
        if (limiters_[i].config->name == name) {
          indices.push_back(i);
        }
      }
    }
  }
}

limiter::Limiter& Pipeline::instance_for(LimiterSlot& slot, std::string_view key_text) noexcept {
  for (auto& [value, limiter] : slot.overrides) {
    if (value == key_text) {
      return *limiter;
    }
  }
  return *slot.main;
}

Decision Pipeline::decide(const RequestView& request, limiter::TimePoint now,
                          std::optional<limiter::Permits> cost) {
  Decision decision;
  decision.client = client_address(request.peer, config_.trusted_proxies,
                                   request.header("Forwarded"), request.header("X-Forwarded-For"));
  if (deny_.contains(decision.client)) {
    decision.outcome = Outcome::denied;
    decision.status = 403;
    return decision;
  }
  if (ban_) {
    if (const auto left = ban_->banned_for(decision.client, now)) {
      decision.outcome = Outcome::denied;
      decision.status = 403;
      decision.banned = true;
      decision.retry_after = *left;
      return decision;
    }
  }
  const std::optional<std::size_t> index = routes_.match(request);
  if (!index) {
    decision.outcome = Outcome::no_route;
    decision.status = 404;
    return decision;
  }
  const config::Route& route = config_.routes[*index];
  decision.route = &route;

  // Keys are built in a per-thread buffer that keeps its capacity: no allocation per request.
  thread_local std::string key_text;
  std::array<Charge, kMaxChargesPerRequest> live{};
  std::array<Charge, kMaxChargesPerRequest> shadow{};
  std::array<std::size_t, kMaxChargesPerRequest> live_report{};
  std::array<std::size_t, kMaxChargesPerRequest> shadow_report{};
  std::size_t live_count = 0;
  std::size_t shadow_count = 0;
  for (const std::size_t slot_index : route_limiters_[*index]) {
    LimiterSlot& slot = limiters_[slot_index];
    if (!build_key(slot.config->key, slot.config->ipv6_prefix, request, decision.client, route.name,
                   key_text)) {
      continue;  // the key cannot be formed: this limiter does not apply
    }
    const Charge charge_of{&instance_for(slot, key_text), limiter::hash_key(key_text),
                           cost.value_or(route.cost)};
    const std::size_t report = decision.report_count++;
    decision.reports[report].limiter = slot.config;
    decision.reports[report].key = charge_of.key;
    if (slot.config->shadow) {
      shadow_report[shadow_count] = report;
      shadow[shadow_count++] = charge_of;
    } else {
      live_report[live_count] = report;
      live[live_count++] = charge_of;
    }
  }

  const std::span<const Charge> live_charges(live.data(), live_count);
  const std::span<const std::size_t> live_reports(live_report.data(), live_count);
  const limiter::Decision verdict = charge(live_charges, live_reports, now, decision);
  if (!verdict.admitted) {
    decision.outcome = Outcome::limited;
    decision.retry_after = verdict.retry_after;
    decision.status = 429;
    for (const LimiterReport& report : decision.applied()) {
      if (!report.limiter->shadow && !report.verdict.admitted) {
        decision.status = report.limiter->status;  // the first limiter that refused
        break;
      }
    }
    if (ban_) {
      ban_->strike(decision.client, now);
    }
    // Shadow limiters are not charged for a request that does not go through: they did not
    // apply to it, so they are not reported either.
    const auto kept = std::remove_if(
        decision.reports.begin(),
        decision.reports.begin() + static_cast<std::ptrdiff_t>(decision.report_count),
        [](const LimiterReport& r) { return r.limiter->shadow; });
    decision.report_count = static_cast<std::size_t>(kept - decision.reports.begin());
    return decision;
  }
  keep_permits(live_charges, live_reports, decision);
  // Shadow limiters are charged as if live, but only for requests that go through, and they
  // never stop one: a refusal is only reported (shadow_limited).
  const std::span<const Charge> shadow_charges(shadow.data(), shadow_count);
  const std::span<const std::size_t> shadow_reports(shadow_report.data(), shadow_count);
  if (charge(shadow_charges, shadow_reports, now, decision).admitted) {
    keep_permits(shadow_charges, shadow_reports, decision);
  }
  decision.hold = verdict.hold;
  decision.outcome = verdict.hold > limiter::Duration::zero() ? Outcome::delayed : Outcome::allowed;
  decision.status = route.respond ? route.respond->status : 0;
  return decision;
}

void Pipeline::release(const Decision& decision) noexcept {
  for (std::size_t i = 0; i < decision.permit_count; ++i) {
    const Permit& permit = decision.permits[i];
    permit.limiter->release(permit.key, permit.cost);
  }
}

std::optional<limiter::Status> Pipeline::peek(std::string_view limiter_name,
                                              std::string_view key_text, limiter::TimePoint now) {
  for (LimiterSlot& slot : limiters_) {
    if (slot.config->name == limiter_name) {
      const std::string internal = internal_key_text(std::string(key_text));
      return instance_for(slot, internal).peek(limiter::hash_key(internal), now);
    }
  }
  return std::nullopt;
}

std::optional<limiter::Duration> Pipeline::banned_for(const IpAddress& client,
                                                      limiter::TimePoint now) {
  return ban_ ? ban_->banned_for(client, now) : std::nullopt;
}

std::vector<std::pair<std::string_view, std::uint64_t>> Pipeline::limiter_keys() const {
  std::vector<std::pair<std::string_view, std::uint64_t>> keys;
  for (const LimiterSlot& slot : limiters_) {
    std::uint64_t count = slot.main->stats().keys;
    for (const auto& [value, limiter] : slot.overrides) {
      count += limiter->stats().keys;
    }
    keys.emplace_back(slot.config->name, count);
  }
  return keys;
}

void Pipeline::collect_idle(limiter::TimePoint now) {
  for (LimiterSlot& slot : limiters_) {
    slot.main->collect_idle(now);
    for (auto& [value, limiter] : slot.overrides) {
      limiter->collect_idle(now);
    }
  }
}

}  // namespace sluice::proxy
