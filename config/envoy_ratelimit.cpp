#include "config/envoy_ratelimit.hpp"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cctype>
#include <stdexcept>

#include "config/names.hpp"
#include "config/yaml_reader.hpp"
#include "limiter/make_limiter.hpp"

namespace sluice::config {
namespace {

using limiter::AlgorithmKind;
using namespace std::chrono_literals;

/// What reading one file shares.
struct EnvoyFile {
  AlgorithmKind algorithm;
  std::uint64_t max_keys;
  std::vector<LimiterConfig>& limiters;
  ReadContext& context;
  RlsDomain& domain;
};

/// A key, value or name as written: the file is read unchanged (no ${VAR}). A null reads as
/// empty, as envoyproxy/ratelimit reads it.
std::optional<std::string> raw_text(MapReader& reader, std::string_view key) {
  if (!reader.has(key)) {
    return std::nullopt;
  }
  const YAML::Node node = reader.node(key);
  if (node.IsNull()) {
    return std::string();
  }
  if (!node.IsScalar()) {
    reader.error(key, "expected a single value");
    return std::nullopt;
  }
  return node.Scalar();
}

/// envoyproxy/ratelimit's limit as a sluice limiter's parameters: windows count
/// requests_per_unit per unit; buckets fill at that rate and hold as many.
limiter::LimiterOptions options_for(AlgorithmKind algorithm, std::uint64_t requests_per_unit,
                                    limiter::Duration unit, std::uint64_t max_keys) {
  limiter::LimiterOptions options;
  options.algorithm = algorithm;
  options.max_keys = max_keys;
  if (algorithm == AlgorithmKind::token_bucket || algorithm == AlgorithmKind::leaky_bucket) {
    options.rate = limiter::Rate{.permits = static_cast<double>(requests_per_unit), .period = unit};
    options.burst = static_cast<double>(requests_per_unit);
  } else {
    options.limit = requests_per_unit;
    options.window = unit;
  }
  return options;
}

/// `replaces: [{name: X}, ...]`: the names of the limits this one replaces.
std::vector<std::string> read_replaces(MapReader& limit, const std::string& own_name,
                                       ReadContext& context) {
  std::vector<std::string> names;
  if (!limit.has("replaces")) {
    return names;
  }
  const YAML::Node list = limit.node("replaces");
  if (!list.IsSequence()) {
    limit.error("replaces", "expected a list of {name: NAME}");
    return names;
  }
  for (std::size_t i = 0; i < list.size(); ++i) {
    MapReader item(list[i], limit.path("replaces") + "[" + std::to_string(i) + "]", {"name"},
                   context);
    const std::optional<std::string> name = raw_text(item, "name");
    if (!item.valid() || !name || name->empty()) {
      context.diagnostics.error(location_of(list[i]),
                                limit.path("replaces") + "[" + std::to_string(i) +
                                    "]: an empty entry; give the name of the limit it replaces");
    } else if (*name == own_name) {
      item.error("name", "a limit cannot replace itself");
    } else {
      names.push_back(*name);
    }
  }
  return names;
}

/// A descriptor's `rate_limit`: a rule for the path to it, and unless `unlimited` its limiter.
void read_rate_limit(EnvoyFile& file, MapReader& descriptor, std::vector<RlsEntry> entries,
                     const std::string& full_key, bool shadow) {
  auto section = descriptor.section("rate_limit",
                                    {"unit", "requests_per_unit", "unlimited", "name", "replaces"});
  if (!section || !section->valid()) {
    return;
  }
  MapReader& limit = *section;
  const std::size_t problems_before = file.context.diagnostics.count();
  RlsRule rule;
  rule.entries = std::move(entries);
  rule.name = raw_text(limit, "name").value_or("");
  rule.replaces = read_replaces(limit, rule.name, file.context);
  rule.at = descriptor.at();
  if (limit.flag("unlimited").value_or(false)) {
    if (limit.has("unit")) {
      limit.error("unit", "not with unlimited: true (an unlimited descriptor has no unit)");
    }
  } else {
    std::optional<limiter::Duration> unit;
    if (limit.require("unit")) {
      const std::optional<std::string> word = raw_text(limit, "unit");
      unit = word ? envoy_unit_length(*word) : std::nullopt;
      if (word && !unit) {
        limit.error("unit", "\"" + *word +
                                "\" is not one of second, minute, hour, day, week, month or year");
      }
    }
    std::optional<std::uint64_t> requests_per_unit;
    if (limit.require("requests_per_unit")) {
      requests_per_unit = limit.whole_number("requests_per_unit", 1, 4'294'967'295);
    }
    if (!unit || !requests_per_unit) {
      return;
    }
    LimiterConfig limiter;
    limiter.name = "rls:" + full_key;
    limiter.options = options_for(file.algorithm, *requests_per_unit, *unit, file.max_keys);
    limiter.key = KeySpec{.text = "descriptor", .parts = {}};
    limiter.shadow = shadow;
    limiter.at = rule.at;
    if (!plain_name(limiter.name)) {
      descriptor.error("key", plain_name_problem(limiter.name));
    } else if (std::any_of(
                   file.limiters.begin(), file.limiters.end(),
                   [&](const LimiterConfig& other) { return other.name == limiter.name; })) {
      descriptor.error("key", "its limiter's name \"" + limiter.name + "\" is taken");
    }
    try {
      limiter::make_limiter(limiter.options);
    } catch (const std::invalid_argument& refusal) {
      limit.error("requests_per_unit", refusal.what());
    }
    if (file.context.diagnostics.count() != problems_before) {
      return;
    }
    limiter.valid = true;
    rule.limiter = limiter.name;
    file.limiters.push_back(std::move(limiter));
  }
  if (file.context.diagnostics.count() == problems_before) {
    file.domain.rules.push_back(std::move(rule));
  }
}

constexpr bool is_wildcard(std::string_view text) {
  return text.find('*') != std::string_view::npos;
}

/// The `descriptors` under `owner`, depth first: `parent` is the path of entries to it and
/// `parent_key` envoyproxy/ratelimit's key for it ("edge.key_1_value_1").
void read_descriptors(EnvoyFile& file, MapReader& owner, const std::vector<RlsEntry>& parent,
                      const std::string& parent_key) {
  if (!owner.has("descriptors")) {
    return;
  }
  const YAML::Node list = owner.node("descriptors");
  if (!list.IsSequence()) {
    owner.error("descriptors", "expected a list of descriptors");
    return;
  }
  std::vector<std::string> level;  // each descriptor's composite key, key or key_value
  for (std::size_t i = 0; i < list.size(); ++i) {
    MapReader descriptor(list[i], owner.path("descriptors") + "[" + std::to_string(i) + "]",
                         {"key", "value", "rate_limit", "descriptors", "shadow_mode", "quota_mode",
                          "detailed_metric", "value_to_metric", "share_threshold", "metadata"},
                         file.context);
    if (!descriptor.valid() || !descriptor.require("key")) {
      continue;
    }
    const std::optional<std::string> key = raw_text(descriptor, "key");
    const std::optional<std::string> value = raw_text(descriptor, "value");
    if (!key || (descriptor.has("value") && !value)) {
      continue;
    }
    if (key->empty()) {
      descriptor.error("key", "empty");
      continue;
    }
    if (is_wildcard(*key) || (value && is_wildcard(*value))) {
      descriptor.error(is_wildcard(*key) ? "key" : "value",
                       "wildcards (*) are not read: sluice matches keys and values exactly");
      continue;
    }
    const bool has_value = value && !value->empty();
    const std::string composite = has_value ? *key + "_" + *value : *key;
    const std::string full_key = parent_key + "." + composite;
    if (std::find(level.begin(), level.end(), composite) != level.end()) {
      descriptor.error("key", "duplicate descriptor composite key \"" + full_key + "\"");
      continue;
    }
    level.push_back(composite);
    if (descriptor.flag("quota_mode").value_or(false)) {
      descriptor.error("quota_mode", "not supported: sluice enforces a limit or shadows it");
    }
    if (descriptor.flag("share_threshold").value_or(false)) {
      descriptor.error("share_threshold", "applies to wildcard values, which sluice does not read");
    }
    descriptor.flag("detailed_metric");  // metric names: read for their spelling only
    descriptor.flag("value_to_metric");
    const bool shadow = descriptor.flag("shadow_mode").value_or(false);

    std::vector<RlsEntry> entries = parent;
    entries.push_back(RlsEntry{.key = *key, .value = has_value ? value : std::nullopt});
    read_rate_limit(file, descriptor, entries, full_key, shadow);
    read_descriptors(file, descriptor, entries, full_key);
  }
}

}  // namespace

std::optional<limiter::Duration> envoy_unit_length(std::string_view unit) {
  std::string lower(unit);
  std::transform(lower.begin(), lower.end(), lower.begin(), [](char c) {
    return static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  });
  constexpr std::pair<std::string_view, std::chrono::seconds> kUnits[] = {
      {"second", 1s},    {"minute", 1min},    {"hour", 1h},       {"day", 24h},
      {"week", 7 * 24h}, {"month", 30 * 24h}, {"year", 365 * 24h}};
  for (const auto& [name, length] : kUnits) {
    if (lower == name) {
      return length;
    }
  }
  return std::nullopt;
}

std::optional<RlsDomain> read_envoy_ratelimit(std::string_view yaml, const std::string& file,
                                              limiter::AlgorithmKind algorithm,
                                              std::uint64_t max_keys,
                                              std::vector<LimiterConfig>& limiters,
                                              Diagnostics& diagnostics) {
  const std::size_t problems_before = diagnostics.count();
  YAML::Node root;
  try {
    root = YAML::Load(std::string(yaml));
  } catch (const YAML::Exception& error) {
    diagnostics.error({error.mark.line + 1, error.mark.column + 1}, "not valid YAML: " + error.msg);
    return std::nullopt;
  }
  const Environment unchanged = [](std::string_view) { return std::optional<std::string>(); };
  ReadContext context{diagnostics, unchanged};
  RlsDomain domain;
  domain.file = file;
  if (root.IsNull()) {
    diagnostics.error({1, 1}, "the file is empty; it needs a domain and descriptors");
    return std::nullopt;
  }
  MapReader top(root, "", {"domain", "descriptors"}, context);
  if (!top.valid()) {
    return std::nullopt;
  }
  if (top.require("domain")) {
    domain.domain = raw_text(top, "domain").value_or("");
    if (domain.domain.empty()) {
      top.error("domain", "empty");
    }
  }
  domain.at = top.at("domain");
  // Limiters are appended only for a file without problems: a half-read file adds none.
  std::vector<LimiterConfig> read = limiters;
  EnvoyFile reader{.algorithm = algorithm,
                   .max_keys = max_keys,
                   .limiters = read,
                   .context = context,
                   .domain = domain};
  read_descriptors(reader, top, {}, domain.domain);
  if (diagnostics.count() != problems_before) {
    return std::nullopt;
  }
  limiters = std::move(read);
  return domain;
}

}  // namespace sluice::config
