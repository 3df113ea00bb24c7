#include "proxy/pipeline/pipeline.hpp"

#include <algorithm>
#include <string>

#include "limiter/key_hash.hpp"
#include "limiter/make_limiter.hpp"
#include "proxy/pipeline/request_key.hpp"

namespace sluice::pipeline {
namespace {

using limiter::Charge;
using limiter::kMaxChargesPerRequest;

/// An override value as written ("1.2.3.4+gold") in the form build_key produces.
std::string internal_key_text(std::string written) {
  std::replace(written.begin(), written.end(), '+', kKeyPartSeparator);
  return written;
}

/// Keeps the concurrency permits of charges[first, last) until the response is over.
void keep_permits(const Charges& charges, std::size_t first, std::size_t last, Decision& decision) {
  for (std::size_t i = first; i < last; ++i) {
    if (charges.options[i]->algorithm == limiter::AlgorithmKind::concurrency) {
      const Charge& charge = charges.items[i];
      decision.permits[decision.permit_count++] = {charge.limiter,
                                                   charge.key,
                                                   charge.cost,
                                                   charges.shared_key[i],
                                                   decision.reports[charges.report[i]].limiter,
                                                   charges.options[i]};
    }
  }
}

/// Keeps the charges of charges[first, last) that wait for the response.
void keep_later_charges(const Charges& charges, const ChargeResult& result, std::size_t first,
                        std::size_t last, limiter::TimePoint now, Decision& decision) {
  for (std::size_t i = first; i < last; ++i) {
    const Charge& charge = charges.items[i];
    if (charge.settled_later) {
      decision.later[decision.later_count++] = {
          .limiter = charge.limiter,
          .key = charge.key,
          .reserved = charge.reserve,
          .cost = charge.cost,
          .decided_at = now,
          .config = decision.reports[charges.report[i]].limiter,
          .options = charges.options[i],
          .shared_key = charges.shared_key[i],
          .store_decided_at = result.decided_at[i]};
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
    case Outcome::unauthorized:
      return "unauthorized";
  }
  return "unknown";
}

Pipeline::Pipeline(const config::ProxyConfig& config, const Pipeline* previous)
    : config_(config),
      identity_(config, previous ? &previous->identity_ : nullptr),
      routes_(config.routes),
      descriptor_rules_(config),
      control_(previous ? previous->control_ : nullptr) {
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
    LimiterSlot slot{&limiter, nullptr, {}, {}};
    if (before && before->config->options == limiter.options) {
      slot.main = before->main;
      ++kept_state_;
    } else {
      slot.main = limiter::make_limiter(limiter.options);
    }
    slot.overrides = instances_for(limiter.overrides, before ? &before->overrides : nullptr,
                                   before ? &before->config->overrides : nullptr);
    slot.tiers = instances_for(limiter.tiers, before ? &before->tiers : nullptr,
                               before ? &before->config->tiers : nullptr);
    limiters_.push_back(std::move(slot));
  }
  for (const config::Route& route : config.routes) {
    route_providers_.push_back(route.auth ? config.jwt_provider_named(route.auth->provider)
                                          : nullptr);
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

std::vector<std::pair<std::string, std::shared_ptr<limiter::Limiter>>> Pipeline::instances_for(
    const std::vector<config::Override>& values,
    const std::vector<std::pair<std::string, std::shared_ptr<limiter::Limiter>>>* before,
    const std::vector<config::Override>* before_values) {
  std::vector<std::pair<std::string, std::shared_ptr<limiter::Limiter>>> instances;
  for (const config::Override& value : values) {
    std::string text = internal_key_text(value.value);
    std::shared_ptr<limiter::Limiter> instance;
    for (std::size_t i = 0; before != nullptr && i < before->size(); ++i) {
      if ((*before)[i].first == text && (*before_values)[i].options == value.options) {
        instance = (*before)[i].second;
        ++kept_state_;
      }
    }
    instances.emplace_back(std::move(text),
                           instance ? instance : limiter::make_limiter(value.options));
  }
  return instances;
}

std::pair<limiter::Limiter*, const limiter::LimiterOptions*> Pipeline::instance_for(
    LimiterSlot& slot, std::string_view key_text,
    std::optional<std::string_view> tier_text) noexcept {
  for (std::size_t i = 0; i < slot.overrides.size(); ++i) {
    if (slot.overrides[i].first == key_text) {
      return {slot.overrides[i].second.get(), &slot.config->overrides[i].options};
    }
  }
  for (std::size_t i = 0; tier_text && i < slot.tiers.size(); ++i) {
    if (slot.tiers[i].first == *tier_text) {
      return {slot.tiers[i].second.get(), &slot.config->tiers[i].options};
    }
  }
  return {slot.main.get(), &slot.config->options};
}

Decision Pipeline::decide(const RequestView& request, limiter::TimePoint now,
                          std::optional<limiter::Permits> cost) {
  Decision decision;
  Charges charges;
  if (prepare(request, now, cost, decision, charges)) {
    conclude(decision, charges, charge_locally(charges, now), now);
  }
  return decision;
}

bool Pipeline::prepare(const RequestView& request, limiter::TimePoint now,
                       std::optional<limiter::Permits> cost, Decision& decision, Charges& charges) {
  decision.client = client_address(request.peer, config_.trusted_proxies,
                                   request.header("Forwarded"), request.header("X-Forwarded-For"));
  if (deny_.contains(decision.client)) {
    decision.outcome = Outcome::denied;
    decision.status = 403;
    return false;
  }
  const RuntimeSnapshot* runtime = control_ && control_->any() ? &control_->snapshot() : nullptr;
  if (runtime) {
    if (const auto left = runtime->banned_for(decision.client, now)) {
      decision.outcome = Outcome::denied;
      decision.status = 403;
      decision.banned = true;
      decision.retry_after = *left;
      return false;
    }
  }
  if (ban_) {
    if (const auto left = ban_->banned_for(decision.client, now)) {
      decision.outcome = Outcome::denied;
      decision.status = 403;
      decision.banned = true;
      decision.retry_after = *left;
      return false;
    }
  }
  const std::optional<std::size_t> index = routes_.match(request);
  if (!index) {
    decision.outcome = Outcome::no_route;
    decision.status = 404;
    return false;
  }
  const config::Route& route = config_.routes[*index];
  decision.route = &route;
  if (const config::JwtProviderConfig* provider = route_providers_[*index]) {
    identity_.authenticate(*provider, request, now, decision.auth);
    if (decision.auth.refused(*route.auth)) {
      decision.outcome = Outcome::unauthorized;
      decision.status = 401;
      return false;
    }
  }

  // Keys are built in per-thread buffers that keep their capacity: no allocation per request.
  thread_local std::string key_text;
  thread_local std::string tier_text;
  ChargeOrder order(charges);
  for (const std::size_t slot_index : route_limiters_[*index]) {
    LimiterSlot& slot = limiters_[slot_index];
    if (!build_key(slot.config->key, slot.config->ipv6_prefix, request, decision.client, route.name,
                   decision.auth.identity.get(), key_text)) {
      continue;  // the key cannot be formed: this limiter does not apply
    }
    const bool tiered = slot.config->tier && build_key(*slot.config->tier, slot.config->ipv6_prefix,
                                                       request, decision.client, route.name,
                                                       decision.auth.identity.get(), tier_text);
    Found found = charge_of(slot, key_text,
                            tiered ? std::optional<std::string_view>(tier_text) : std::nullopt,
                            cost.value_or(route.cost), runtime, now, decision);
    if (slot.config->settled_later()) {
      // Admitted while the budget has room (for the estimate, if any); charged once the
      // response is over.
      found.charge.settled_later = true;
      if (slot.config->cost_from_response) {
        const limiter::Permits estimate = route.cost_from ? route.cost_from->estimate : 0;
        found.charge.cost = std::max<limiter::Permits>(estimate, 1);
        found.charge.reserve = estimate;
      }
    }
    order.add(found, slot.config->shadow);
  }
  order.finish();
  return true;
}

Pipeline::Found Pipeline::charge_of(LimiterSlot& slot, std::string_view key_text,
                                    std::optional<std::string_view> tier_text,
                                    limiter::Permits cost, const RuntimeSnapshot* runtime,
                                    limiter::TimePoint now, Decision& decision) {
  auto [instance, options] = instance_for(slot, key_text, tier_text);
  if (runtime) {
    // A runtime override (SPEC §10) comes before the config's overrides and tiers.
    const RuntimeSnapshot::Override* override =
        runtime->override_for(slot.config->name, key_text, now);
    if (override && override->instance->base == slot.config->options) {
      instance = override->instance->limiter.get();
      options = &override->instance->options;
    }
  }
  const Found found{.charge = {instance, limiter::hash_key(key_text), cost},
                    .shared_key = limiter::hash_key(key_text, kSharedKeySeed),
                    .options = options,
                    .report = decision.report_count++};
  LimiterReport& report = decision.reports[found.report];
  report.limiter = slot.config;
  report.options = options;
  report.key = found.charge.key;
  return found;
}

void Pipeline::ChargeOrder::add(const Found& found, bool shadow) noexcept {
  if (shadow) {
    shadow_[shadow_count_++] = found;
  } else {
    place(charges_.live++, found);
  }
}

void Pipeline::ChargeOrder::finish() noexcept {
  charges_.count = charges_.live;
  for (std::size_t s = 0; s < shadow_count_; ++s) {
    place(charges_.count++, shadow_[s]);
  }
}

limiter::Charge* Pipeline::ChargeOrder::charge_of_report(std::size_t report) noexcept {
  for (std::size_t i = 0; i < charges_.live; ++i) {
    if (charges_.report[i] == report) {
      return &charges_.items[i];
    }
  }
  for (std::size_t s = 0; s < shadow_count_; ++s) {
    if (shadow_[s].report == report) {
      return &shadow_[s].charge;
    }
  }
  return nullptr;
}

void Pipeline::ChargeOrder::place(std::size_t i, const Found& found) noexcept {
  charges_.items[i] = found.charge;
  charges_.shared_key[i] = found.shared_key;
  charges_.options[i] = found.options;
  charges_.report[i] = found.report;
}

DescriptorsPrepared Pipeline::prepare_descriptors(std::string_view domain,
                                                  std::span<const Descriptor> descriptors,
                                                  limiter::Permits cost, limiter::TimePoint now,
                                                  Decision& decision, Charges& charges,
                                                  std::span<std::size_t> report_of) {
  std::fill(report_of.begin(), report_of.end(), kNoReport);
  const std::optional<std::size_t> index = descriptor_rules_.domain(domain);
  if (!index) {
    return DescriptorsPrepared::unknown_domain;
  }
  // The rules matched, then those another one replaces dropped (per thread: no allocation).
  thread_local std::vector<const config::RlsRule*> matched;
  matched.assign(descriptors.size(), nullptr);
  for (std::size_t d = 0; d < descriptors.size(); ++d) {
    matched[d] = descriptor_rules_.match(*index, descriptors[d]);
  }
  drop_replaced(matched);
  const RuntimeSnapshot* runtime = control_ && control_->any() ? &control_->snapshot() : nullptr;
  thread_local std::string key_text;
  ChargeOrder order(charges);
  for (std::size_t d = 0; d < descriptors.size(); ++d) {
    const std::size_t slot_index = matched[d] != nullptr
                                       ? descriptor_rules_.limiter_index(*matched[d])
                                       : DescriptorRules::npos;
    if (slot_index == DescriptorRules::npos) {
      continue;  // no rule, or `unlimited`: OK
    }
    LimiterSlot& slot = limiters_[slot_index];
    descriptor_key(descriptors[d], key_text);
    // One request decides a limiter once: the same key again adds to its cost, another key
    // cannot be decided with it (all or nothing needs one lock per limiter).
    bool merged = false;
    for (std::size_t earlier = 0; earlier < d && !merged; ++earlier) {
      const std::size_t r = report_of[earlier];
      if (r == kNoReport || decision.reports[r].limiter != slot.config) {
        continue;
      }
      if (decision.reports[r].key != limiter::hash_key(key_text)) {
        return DescriptorsPrepared::limiter_twice;
      }
      order.charge_of_report(r)->cost += cost;
      report_of[d] = r;
      merged = true;
    }
    if (merged) {
      continue;
    }
    if (decision.report_count == kMaxChargesPerRequest) {
      return DescriptorsPrepared::too_many;
    }
    const Found found = charge_of(slot, key_text, std::nullopt, cost, runtime, now, decision);
    report_of[d] = found.report;
    order.add(found, slot.config->shadow);
  }
  order.finish();
  return charges.count == 0 ? DescriptorsPrepared::none : DescriptorsPrepared::charges;
}

ChargeResult Pipeline::charge_locally(const Charges& charges, limiter::TimePoint now) {
  ChargeResult result;
  const std::span<limiter::Outcome> outcomes(result.outcomes);
  result.live_admitted =
      limiter::decide(charges.live_items(), now, outcomes.first(charges.live)).admitted;
  // Shadow limiters are charged as if live, but only for requests that go through.
  if (result.live_admitted) {
    result.shadow_admitted =
        limiter::decide(charges.shadow_items(), now, outcomes.subspan(charges.live)).admitted;
  }
  return result;
}

void Pipeline::conclude(Decision& decision, const Charges& charges, const ChargeResult& result,
                        limiter::TimePoint now) {
  // An Envoy rate-limit request (prepare_descriptors) has no route, nor a client to ban.
  const unsigned admitted_status =
      decision.route != nullptr && decision.route->respond ? decision.route->respond->status : 0;
  if (result.counted == Counted::refuse) {
    decision.outcome = Outcome::denied;
    decision.status = 503;
    decision.retry_after = kStoreDownRetryAfter;
    decision.report_count = 0;
    return;
  }
  if (result.counted == Counted::let_pass) {
    decision.outcome = Outcome::allowed;
    decision.status = admitted_status;
    decision.report_count = 0;  // nothing was counted: no RateLimit headers to give
    return;
  }
  decision.store_permit = result.store_permit;
  const std::size_t filed = result.live_admitted ? charges.count : charges.live;
  for (std::size_t i = 0; i < filed; ++i) {
    LimiterReport& report = decision.reports[charges.report[i]];
    report.verdict = result.outcomes[i].verdict;
    report.status = result.outcomes[i].status;
  }
  if (!result.live_admitted) {
    decision.outcome = Outcome::limited;
    decision.status = 429;
    decision.retry_after = {};
    for (std::size_t i = 0; i < charges.live; ++i) {
      const limiter::Verdict& verdict = result.outcomes[i].verdict;
      if (!verdict.admitted) {
        decision.retry_after = std::max(decision.retry_after, verdict.retry_after);
      }
    }
    for (const LimiterReport& report : decision.applied()) {
      if (!report.limiter->shadow && !report.verdict.admitted) {
        decision.status = report.limiter->status;  // the first limiter that refused
        break;
      }
    }
    if (ban_ && decision.route != nullptr) {
      ban_->strike(decision.client, now);
    }
    // Shadow limiters are not charged for a request that does not go through: they did not
    // apply to it, so they are not reported either.
    const auto kept = std::remove_if(
        decision.reports.begin(),
        decision.reports.begin() + static_cast<std::ptrdiff_t>(decision.report_count),
        [](const LimiterReport& r) { return r.limiter->shadow; });
    decision.report_count = static_cast<std::size_t>(kept - decision.reports.begin());
    return;
  }
  keep_permits(charges, 0, charges.live, decision);
  keep_later_charges(charges, result, 0, charges.live, now, decision);
  // A shadow refusal never stops a request: it is only reported (shadow_limited).
  if (result.shadow_admitted) {
    keep_permits(charges, charges.live, charges.count, decision);
    keep_later_charges(charges, result, charges.live, charges.count, now, decision);
  }
  decision.hold = {};
  for (std::size_t i = 0; i < charges.live; ++i) {
    decision.hold = std::max(decision.hold, result.outcomes[i].verdict.hold);
  }
  decision.outcome =
      decision.hold > limiter::Duration::zero() ? Outcome::delayed : Outcome::allowed;
  decision.status = admitted_status;
}

void Pipeline::release_locally(const Decision& decision) noexcept {
  for (std::size_t i = 0; i < decision.permit_count; ++i) {
    const Permit& permit = decision.permits[i];
    permit.limiter->release(permit.key, permit.cost);
  }
}

limiter::Permits owed_for(const config::Route& route, const LaterCharge& later,
                          const ResponseSaid& said) noexcept {
  const config::LimiterConfig& limiter = *later.config;
  const std::vector<unsigned>& statuses = limiter.count_if_status;
  if (!statuses.empty() &&
      std::find(statuses.begin(), statuses.end(), said.status) == statuses.end()) {
    return 0;
  }
  if (!limiter.cost_from_response) {
    return later.cost;
  }
  return said.cost.value_or(route.cost_from ? route.cost_from->estimate : 0);
}

void Pipeline::settle_locally(const config::Route& route, std::span<const LaterCharge> charges,
                              const ResponseSaid& said, limiter::TimePoint now) noexcept {
  for (const LaterCharge& later : charges) {
    const limiter::Permits owed = owed_for(route, later, said);
    if (owed > later.reserved) {
      later.limiter->charge(later.key, now, owed - later.reserved);
    } else if (owed < later.reserved) {
      later.limiter->refund(later.key, later.decided_at, now, later.reserved - owed);
    }
  }
}

std::optional<limiter::Status> Pipeline::peek(std::string_view limiter_name,
                                              std::string_view key_text, limiter::TimePoint now,
                                              std::optional<std::string_view> tier) {
  for (LimiterSlot& slot : limiters_) {
    if (slot.config->name == limiter_name) {
      const std::string internal = internal_key_text(std::string(key_text));
      const std::optional<std::string> tier_text =
          tier ? std::optional(internal_key_text(std::string(*tier))) : std::nullopt;
      limiter::Limiter* instance =
          instance_for(slot, internal,
                       tier_text ? std::optional<std::string_view>(*tier_text) : std::nullopt)
              .first;
      if (control_ && control_->any()) {
        const RuntimeSnapshot::Override* override =
            control_->snapshot().override_for(slot.config->name, internal, now);
        if (override && override->instance->base == slot.config->options) {
          instance = override->instance->limiter.get();
        }
      }
      return instance->peek(limiter::hash_key(internal), now);
    }
  }
  return std::nullopt;
}

std::size_t Pipeline::instance_of(const LimiterReport& report) noexcept {
  const config::LimiterConfig& limiter = *report.limiter;
  for (std::size_t i = 0; i < limiter.overrides.size(); ++i) {
    if (report.options == &limiter.overrides[i].options) {
      return 1 + i;
    }
  }
  for (std::size_t i = 0; i < limiter.tiers.size(); ++i) {
    if (report.options == &limiter.tiers[i].options) {
      return 1 + limiter.overrides.size() + i;
    }
  }
  return 0;
}

std::optional<limiter::Status> Pipeline::peek_counted(std::size_t limiter_index,
                                                      std::size_t instance, limiter::KeyHash key,
                                                      limiter::TimePoint now) {
  if (limiter_index >= limiters_.size()) {
    return std::nullopt;
  }
  LimiterSlot& slot = limiters_[limiter_index];
  limiter::Limiter* counted = slot.main.get();
  if (instance > 0 && instance <= slot.overrides.size()) {
    counted = slot.overrides[instance - 1].second.get();
  } else if (instance > slot.overrides.size() &&
             instance <= slot.overrides.size() + slot.tiers.size()) {
    counted = slot.tiers[instance - 1 - slot.overrides.size()].second.get();
  } else if (instance != 0) {
    return std::nullopt;
  }
  return counted->peek(key, now);
}

std::optional<limiter::Duration> Pipeline::banned_for(const IpAddress& client,
                                                      limiter::TimePoint now) {
  if (control_ && control_->any()) {
    if (const auto left = control_->snapshot().banned_for(client, now)) {
      return left;
    }
  }
  return ban_ ? ban_->banned_for(client, now) : std::nullopt;
}

bool Pipeline::lift_ban(const IpAddress& client, limiter::TimePoint now) {
  return ban_ && ban_->lift(client, now);
}

std::optional<std::vector<limiter::LimiterOptions>> Pipeline::forget(std::string_view limiter_name,
                                                                     std::string_view key_text,
                                                                     limiter::TimePoint now) {
  for (LimiterSlot& slot : limiters_) {
    if (slot.config->name != limiter_name) {
      continue;
    }
    const std::string internal = internal_key_text(std::string(key_text));
    const limiter::KeyHash key = limiter::hash_key(internal);
    std::vector<limiter::LimiterOptions> definitions;
    const auto forget_in = [&](limiter::Limiter& instance, const limiter::LimiterOptions& options) {
      if (options.algorithm == limiter::AlgorithmKind::concurrency) {
        return;  // requests in flight: they give their permits back as they finish
      }
      instance.forget(key);
      if (std::find(definitions.begin(), definitions.end(), options) == definitions.end()) {
        definitions.push_back(options);
      }
    };
    forget_in(*slot.main, slot.config->options);
    for (std::size_t i = 0; i < slot.overrides.size(); ++i) {
      if (slot.overrides[i].first == internal) {
        forget_in(*slot.overrides[i].second, slot.config->overrides[i].options);
      }
    }
    // The key's tier is not known here: it is forgotten in each (a tier's key is the same key).
    for (std::size_t i = 0; i < slot.tiers.size(); ++i) {
      forget_in(*slot.tiers[i].second, slot.config->tiers[i].options);
    }
    if (control_ && control_->any()) {
      if (const RuntimeSnapshot::Override* override =
              control_->snapshot().override_for(slot.config->name, internal, now)) {
        forget_in(*override->instance->limiter, override->instance->options);
      }
    }
    return definitions;
  }
  return std::nullopt;
}

std::vector<std::pair<std::string_view, std::uint64_t>> Pipeline::limiter_keys() const {
  std::vector<std::pair<std::string_view, std::uint64_t>> keys;
  for (const LimiterSlot& slot : limiters_) {
    std::uint64_t count = slot.main->stats().keys;
    for (const auto& [value, limiter] : slot.overrides) {
      count += limiter->stats().keys;
    }
    for (const auto& [value, limiter] : slot.tiers) {
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
    for (auto& [value, limiter] : slot.tiers) {
      limiter->collect_idle(now);
    }
  }
}

}  // namespace sluice::pipeline
