#include "config/read_rls.hpp"

#include <algorithm>
#include <fstream>
#include <sstream>

#include "config/did_you_mean.hpp"
#include "config/envoy_ratelimit.hpp"

namespace sluice::config {
namespace {

using limiter::AlgorithmKind;

/// A rule's `limiter`: defined, and able to decide without an end of request.
std::optional<std::string> read_rule_limiter(MapReader& reader, const ProxyConfig& config) {
  const std::optional<std::string> name = reader.text("limiter");
  if (!name) {
    return std::nullopt;
  }
  const LimiterConfig* limiter = config.limiter_named(*name);
  if (limiter == nullptr) {
    std::vector<std::string_view> known;
    for (const LimiterConfig& defined : config.limiters) {
      known.push_back(defined.name);
    }
    std::string message = "no limiter is named \"" + *name + "\"";
    if (const auto suggestion = closest_word(*name, known)) {
      message += " (did you mean \"" + std::string(*suggestion) + "\"?)";
    }
    reader.error("limiter", message + (known.empty() ? std::string("; none is defined")
                                                     : "; defined: " + join_words(known, "and")));
    return std::nullopt;
  }
  if (const std::string problem = needs_end_of_request(*limiter); !problem.empty()) {
    reader.error("limiter", "the decision service never learns how a request ends: " + problem);
    return std::nullopt;
  }
  return name;
}

/// A rule's entries: `key` (and `value`), or `entries: [key, key=value, ...]`.
std::vector<RlsEntry> read_entries(MapReader& reader, ReadContext& context) {
  std::vector<RlsEntry> entries;
  if (reader.has("key") && reader.has("entries")) {
    reader.error("entries", "give key (with value) or entries, not both");
    return entries;
  }
  if (reader.has("key")) {
    const std::optional<std::string> key = reader.text("key");
    if (key && key->empty()) {
      reader.error("key", "empty");
    } else if (key) {
      entries.push_back(RlsEntry{.key = *key, .value = reader.text("value")});
    }
    return entries;
  }
  if (!reader.has("entries")) {
    context.diagnostics.error(reader.at(), reader.path() +
                                               ": give key (with value) or entries: the "
                                               "descriptor it decides");
    return entries;
  }
  if (reader.has("value")) {
    reader.error("value", "goes with key; in entries, write key=value");
  }
  for (const auto& [text, where] : reader.located_texts("entries")) {
    const std::size_t equals = text.find('=');
    RlsEntry entry{.key = text.substr(0, equals), .value = std::nullopt};
    if (equals != std::string::npos) {
      entry.value = text.substr(equals + 1);
    }
    if (entry.key.empty()) {
      context.diagnostics.error(
          where, reader.path("entries") + ": \"" + text + "\" has no key (key or key=value)");
      continue;
    }
    entries.push_back(std::move(entry));
  }
  if (reader.node("entries").IsSequence() && reader.node("entries").size() == 0) {
    reader.error("entries", "an empty list: give at least one key");
  }
  return entries;
}

/// `{domain, descriptors: [...]}`, written in proxy.yaml.
RlsDomain read_domain(MapReader& item, const ProxyConfig& config, ReadContext& context) {
  RlsDomain domain;
  domain.at = item.at();
  if (item.require("domain")) {
    domain.domain = item.text("domain").value_or("");
    if (item.node("domain").IsScalar() && domain.domain.empty()) {
      item.error("domain", "empty");
    }
  }
  if (!item.require("descriptors")) {
    return domain;
  }
  const YAML::Node list = item.node("descriptors");
  if (!list.IsSequence()) {
    item.error("descriptors", "expected a list of {key, value, limiter} or {entries, limiter}");
    return domain;
  }
  std::vector<std::size_t> written;  // each rule's index in the list
  for (std::size_t i = 0; i < list.size(); ++i) {
    MapReader reader(list[i], item.path("descriptors") + "[" + std::to_string(i) + "]",
                     {"key", "value", "entries", "limiter", "unlimited"}, context);
    if (!reader.valid()) {
      continue;
    }
    const std::size_t problems_before = context.diagnostics.count();
    RlsRule rule;
    rule.at = reader.at();
    rule.entries = read_entries(reader, context);
    const bool unlimited = reader.flag("unlimited").value_or(false);
    if (unlimited && reader.has("limiter")) {
      reader.error("unlimited", "give limiter or unlimited: true, not both");
    } else if (reader.has("limiter")) {
      rule.limiter = read_rule_limiter(reader, config).value_or("");
    } else if (!unlimited) {
      reader.require("limiter");
    }
    if (context.diagnostics.count() != problems_before) {
      continue;
    }
    for (std::size_t earlier = 0; earlier < domain.rules.size(); ++earlier) {
      if (domain.rules[earlier].entries == rule.entries) {
        context.diagnostics.error(rule.at, reader.path() + ": the same entries as " +
                                               item.path("descriptors") + "[" +
                                               std::to_string(written[earlier]) + "]");
      }
    }
    domain.rules.push_back(std::move(rule));
    written.push_back(i);
  }
  return domain;
}

/// `{envoy_config: FILE, algorithm}`: an envoyproxy/ratelimit file, its problems reported in
/// proxy.yaml where the file is named, each as FILE:LINE:COL.
std::optional<RlsDomain> read_envoy_item(MapReader& item, ProxyConfig& config) {
  AlgorithmKind algorithm = AlgorithmKind::fixed_window;
  if (const std::optional<std::string> word = item.text("algorithm")) {
    const std::optional<AlgorithmKind> named = limiter::algorithm_named(*word);
    if (named == AlgorithmKind::concurrency) {
      item.error("algorithm",
                 "concurrency counts requests in flight, and the decision service "
                 "never learns how a request ends");
      return std::nullopt;
    }
    if (!named) {
      item.error("algorithm", "\"" + *word +
                                  "\" is not one of fixed_window, sliding_log, sliding_window, "
                                  "wheel, token_bucket or leaky_bucket");
      return std::nullopt;
    }
    algorithm = *named;
  }
  const std::optional<std::string> file = item.text("envoy_config");
  if (!file) {
    return std::nullopt;
  }
  // As written, like every file the config names (certificates, keys, JWKS): relative to the
  // directory sluice runs in.
  std::ifstream in(*file);
  if (file->empty() || !in) {
    item.error("envoy_config", "cannot read \"" + *file + "\"");
    return std::nullopt;
  }
  std::ostringstream text;
  text << in.rdbuf();
  Diagnostics own(*file);
  std::optional<RlsDomain> domain = read_envoy_ratelimit(
      text.str(), *file, algorithm, config.store.max_keys, config.limiters, own);
  try {
    own.throw_if_any();
  } catch (const ConfigError& error) {
    for (const std::string& line : error.lines()) {
      item.error("envoy_config", line);
    }
  }
  if (domain) {
    domain->at = item.at();
  }
  return domain;
}

}  // namespace

std::string needs_end_of_request(const LimiterConfig& limiter) {
  const std::string name = "limiter \"" + limiter.name + "\"";
  if (limiter.options.algorithm == AlgorithmKind::concurrency) {
    return name + " is a concurrency limiter, whose permits come back when a request ends";
  }
  if (limiter.cost_from_response) {
    return name + " is charged what the response cost (cost: response)";
  }
  if (!limiter.count_if_status.empty()) {
    return name + " is charged by the response's status (count_if)";
  }
  return {};
}

std::vector<RlsDomain> read_rls(MapReader& top, ProxyConfig& config, ReadContext& context) {
  std::vector<RlsDomain> domains;
  if (!top.has("rls") || top.node("rls").IsNull()) {
    return domains;
  }
  const YAML::Node list = top.node("rls");
  if (!list.IsSequence()) {
    top.error("rls", "expected a list of domains: {domain, descriptors} or {envoy_config: FILE}");
    return domains;
  }
  std::vector<std::size_t> written;  // each domain's index in the list
  for (std::size_t i = 0; i < list.size(); ++i) {
    const std::string path = "rls[" + std::to_string(i) + "]";
    MapReader item(list[i], path, {"domain", "descriptors", "envoy_config", "algorithm"}, context);
    if (!item.valid()) {
      if (list[i].IsNull()) {
        context.diagnostics.error(location_of(list[i]), path + ": an empty domain");
      }
      continue;
    }
    std::optional<RlsDomain> domain;
    if (item.has("envoy_config")) {
      for (const std::string_view key : {"domain", "descriptors"}) {
        if (item.has(key)) {
          item.error(key, "not with envoy_config: the file gives the domain and its descriptors");
        }
      }
      domain = read_envoy_item(item, config);
    } else {
      if (item.has("algorithm")) {
        item.error("algorithm",
                   "applies to envoy_config only (the algorithm of the limiters its limits "
                   "become); a descriptor written here names its limiter");
      }
      domain = read_domain(item, config, context);
    }
    if (!domain || domain->domain.empty()) {
      continue;
    }
    for (std::size_t earlier = 0; earlier < domains.size(); ++earlier) {
      if (domains[earlier].domain == domain->domain) {
        context.diagnostics.error(item.at(), path + ": the domain \"" + domain->domain +
                                                 "\" is taken by rls[" +
                                                 std::to_string(written[earlier]) + "]");
      }
    }
    domains.push_back(std::move(*domain));
    written.push_back(i);
  }
  return domains;
}

}  // namespace sluice::config
