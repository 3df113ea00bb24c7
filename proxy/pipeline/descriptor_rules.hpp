#pragma once

#include <cstddef>
#include <limits>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "config/proxy_config.hpp"

namespace sluice::pipeline {

/// One entry of a descriptor as it arrives: its key and value.
using DescriptorEntry = std::pair<std::string_view, std::string_view>;

/// The rules of every `rls` domain (SPEC §11), ready to match descriptors. Built once per
/// configuration; read-only then, so thread-safe. Matching allocates nothing.
class DescriptorRules {
 public:
  /// What `limiter_index` answers for an `unlimited` rule.
  static constexpr std::size_t npos = std::numeric_limits<std::size_t>::max();

  /// Copies the rules of `config.rls` and finds their limiters in `config.limiters`.
  explicit DescriptorRules(const config::ProxyConfig& config);

  /// The domain's index, or nullopt: an unknown domain, whose every descriptor is OK.
  std::optional<std::size_t> domain(std::string_view name) const noexcept;

  /// The rule that decides a descriptor of `domain` with these entries, or nullptr (no rule:
  /// OK). A rule matches a descriptor with exactly its keys, in order, and its values where it
  /// gives them; of several, the most specific entry by entry from the first (a value beats any
  /// value), then the first written.
  const config::RlsRule* match(std::size_t domain,
                               std::span<const DescriptorEntry> entries) const noexcept;

  /// The index in `config.limiters` of the limiter that decides a rule `match` returned, or
  /// npos for an `unlimited` one (always OK) and for a rule that is not one of these.
  std::size_t limiter_index(const config::RlsRule& rule) const noexcept;

  std::size_t domain_count() const noexcept { return domains_.size(); }

 private:
  struct Domain {
    std::string name;
    std::size_t begin = 0, end = 0;  ///< Its rules in rules_.
  };

  std::vector<Domain> domains_;
  std::vector<config::RlsRule> rules_;  ///< Every domain's, in the order written.
  std::vector<std::size_t> limiters_;   ///< rules_[i]'s limiter index, or npos.
};

/// Of the rules matched for one request's descriptors (nullptr where none matched), the ones
/// that apply: a rule whose `name` another matched rule `replaces` is cleared to nullptr, as
/// envoyproxy/ratelimit drops a replaced limit. Allocates only for more than 64 descriptors.
void drop_replaced(std::span<const config::RlsRule*> matched);

/// The limiter key of a descriptor: its entries' values joined as a composite key's parts are
/// (shown as '+', held with kKeyPartSeparator, so that overrides and runtime control name it
/// as they name any composite key), written into `key` (cleared first, its capacity reused).
void descriptor_key(std::span<const DescriptorEntry> entries, std::string& key);

}  // namespace sluice::pipeline
