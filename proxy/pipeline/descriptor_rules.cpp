#include "proxy/pipeline/descriptor_rules.hpp"

#include <algorithm>
#include <array>
#include <functional>
#include <memory>

#include "proxy/pipeline/request_key.hpp"

namespace sluice::pipeline {
namespace {

bool rule_matches(const config::RlsRule& rule, std::span<const DescriptorEntry> entries) noexcept {
  if (rule.entries.size() != entries.size()) {
    return false;
  }
  for (std::size_t i = 0; i < entries.size(); ++i) {
    const config::RlsEntry& wanted = rule.entries[i];
    if (wanted.key != entries[i].first || (wanted.value && *wanted.value != entries[i].second)) {
      return false;
    }
  }
  return true;
}

/// Whether `a` is more specific than `b` (both matching one descriptor, so of one length): at
/// the first entry where one gives a value and the other does not, the one with the value.
bool more_specific(const config::RlsRule& a, const config::RlsRule& b) noexcept {
  for (std::size_t i = 0; i < a.entries.size(); ++i) {
    const bool a_value = a.entries[i].value.has_value();
    if (a_value != b.entries[i].value.has_value()) {
      return a_value;
    }
  }
  return false;
}

}  // namespace

DescriptorRules::DescriptorRules(const config::ProxyConfig& config) {
  for (const config::RlsDomain& domain : config.rls) {
    Domain read{.name = domain.domain, .begin = rules_.size(), .end = rules_.size()};
    for (const config::RlsRule& rule : domain.rules) {
      std::size_t limiter = npos;
      for (std::size_t i = 0; !rule.limiter.empty() && i < config.limiters.size(); ++i) {
        if (config.limiters[i].name == rule.limiter) {
          limiter = i;
          break;
        }
      }
      rules_.push_back(rule);
      limiters_.push_back(limiter);
    }
    read.end = rules_.size();
    domains_.push_back(std::move(read));
  }
}

std::optional<std::size_t> DescriptorRules::domain(std::string_view name) const noexcept {
  for (std::size_t i = 0; i < domains_.size(); ++i) {
    if (domains_[i].name == name) {
      return i;
    }
  }
  return std::nullopt;
}

const config::RlsRule* DescriptorRules::match(
    std::size_t domain, std::span<const DescriptorEntry> entries) const noexcept {
  if (domain >= domains_.size()) {
    return nullptr;
  }
  const config::RlsRule* best = nullptr;
  for (std::size_t i = domains_[domain].begin; i < domains_[domain].end; ++i) {
    const config::RlsRule& rule = rules_[i];
    if (rule_matches(rule, entries) && (best == nullptr || more_specific(rule, *best))) {
      best = &rule;
    }
  }
  return best;
}

std::size_t DescriptorRules::limiter_index(const config::RlsRule& rule) const noexcept {
  const std::less<const config::RlsRule*> before;
  if (before(&rule, rules_.data()) || !before(&rule, rules_.data() + rules_.size())) {
    return npos;  // not one of these rules
  }
  return limiters_[static_cast<std::size_t>(&rule - rules_.data())];
}

void drop_replaced(std::span<const config::RlsRule*> matched) {
  const auto replaced = [&](const config::RlsRule& rule) {
    return std::any_of(matched.begin(), matched.end(), [&](const config::RlsRule* other) {
      return other != nullptr && std::find(other->replaces.begin(), other->replaces.end(),
                                           rule.name) != other->replaces.end();
    });
  };
  bool any = false;
  for (const config::RlsRule* rule : matched) {
    any = any || (rule != nullptr && !rule->replaces.empty());
  }
  if (!any) {
    return;
  }
  // Marks first, then clears: a replaced rule's own `replaces` still count (as in
  // envoyproxy/ratelimit), and clearing as it goes would forget them.
  // A request has a few descriptors; only one with more than 64 would allocate.
  constexpr std::size_t kOnStack = 64;
  std::array<bool, kOnStack> on_stack{};
  const std::unique_ptr<bool[]> on_heap =
      matched.size() > kOnStack ? std::make_unique<bool[]>(matched.size()) : nullptr;
  bool* const marks = on_heap ? on_heap.get() : on_stack.data();
  for (std::size_t i = 0; i < matched.size(); ++i) {
    marks[i] = matched[i] != nullptr && !matched[i]->name.empty() && replaced(*matched[i]);
  }
  for (std::size_t i = 0; i < matched.size(); ++i) {
    if (marks[i]) {
      matched[i] = nullptr;
    }
  }
}

void descriptor_key(std::span<const DescriptorEntry> entries, std::string& key) {
  key.clear();
  for (std::size_t i = 0; i < entries.size(); ++i) {
    if (i > 0) {
      key += kKeyPartSeparator;
    }
    key += entries[i].second;
  }
}

}  // namespace sluice::pipeline
