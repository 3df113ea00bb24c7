#pragma once

#include <yaml-cpp/yaml.h>

#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "config/diagnostics.hpp"
#include "config/env_expand.hpp"
#include "limiter/rate.hpp"
#include "limiter/time.hpp"

namespace sluice::config {

/// Where a YAML node starts, 1-based.
Location location_of(const YAML::Node& node);

/// What every reader shares: where problems go and how ${VAR} is expanded.
struct ReadContext {
  Diagnostics& diagnostics;
  const Environment& environment;
};

/// The text of a scalar node with ${VAR} expanded; records a problem (naming `path`) and
/// returns nullopt when the node is not a scalar or a variable is unset.
std::optional<std::string> scalar_text(const YAML::Node& node, const std::string& path,
                                       ReadContext& context);

/// Reads one YAML mapping. Keys it does not accept are reported at once (with a "did you mean"
/// and the accepted keys), as are duplicates; each typed read records its own problem, naming
/// the key's path and what is accepted, and returns nullopt, so that reading carries on and every
/// problem of a file is reported together. Absent keys read as nullopt without a problem.
class MapReader {
 public:
  MapReader(const YAML::Node& node, std::string path, std::vector<std::string_view> accepted,
            ReadContext& context);

  /// False when the node is not a mapping (already reported).
  bool valid() const noexcept { return valid_; }
  bool has(std::string_view key) const;
  YAML::Node node(std::string_view key) const;
  /// The nested mapping under `key`, read with the keys it accepts; nullopt when absent.
  std::optional<MapReader> section(std::string_view key,
                                   std::vector<std::string_view> accepted) const;
  /// The value's location, or the mapping's when the key is absent.
  Location at(std::string_view key) const;
  Location at() const { return location_of(node_); }
  /// "limiters.per-ip.window".
  std::string path(std::string_view key) const;
  const std::string& path() const noexcept { return path_; }

  /// Records "KEY: missing" unless the key is present; returns whether it is.
  bool require(std::string_view key);
  /// Records a problem about `key`: "PATH.KEY: message".
  void error(std::string_view key, const std::string& message);

  std::optional<std::string> text(std::string_view key);
  std::optional<std::uint64_t> whole_number(std::string_view key, std::uint64_t minimum,
                                            std::uint64_t maximum);
  std::optional<double> number(std::string_view key, double minimum);
  std::optional<limiter::Duration> duration(std::string_view key);
  std::optional<limiter::Rate> rate(std::string_view key);
  std::optional<bool> flag(std::string_view key);
  /// A sequence of scalars (a single scalar counts as a one-item list).
  std::optional<std::vector<std::string>> texts(std::string_view key);
  /// The same with each item's location, for messages that point at the item.
  std::vector<std::pair<std::string, Location>> located_texts(std::string_view key);

  /// One of the accepted spellings.
  template <class Value>
  std::optional<Value> choice(std::string_view key,
                              std::initializer_list<std::pair<std::string_view, Value>> options) {
    const std::optional<std::string> word = text(key);
    if (!word) {
      return std::nullopt;
    }
    std::vector<std::string_view> names;
    for (const auto& [name, value] : options) {
      if (name == *word) {
        return value;
      }
      names.push_back(name);
    }
    report_not_one_of(key, *word, names);
    return std::nullopt;
  }

 private:
  void report_not_one_of(std::string_view key, const std::string& word,
                         const std::vector<std::string_view>& accepted);

  YAML::Node node_;
  std::string path_;
  ReadContext& context_;
  bool valid_ = false;
};

/// "a, b or c" (or "a, b and c" with `conjunction` "and").
std::string join_words(const std::vector<std::string_view>& words,
                       std::string_view conjunction = "or");

}  // namespace sluice::config
