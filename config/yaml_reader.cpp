#include "config/yaml_reader.hpp"

#include <charconv>
#include <cmath>

#include "config/did_you_mean.hpp"
#include "config/units.hpp"
#include "limiter/validate.hpp"

namespace sluice::config {

Location location_of(const YAML::Node& node) {
  const YAML::Mark mark = node.Mark();
  if (mark.is_null()) {
    return {};
  }
  return {.line = mark.line + 1, .column = mark.column + 1};
}

std::string join_words(const std::vector<std::string_view>& words, std::string_view conjunction) {
  std::string joined;
  for (std::size_t i = 0; i < words.size(); ++i) {
    if (i > 0) {
      joined += i + 1 == words.size() ? " " + std::string(conjunction) + " " : ", ";
    }
    joined += words[i];
  }
  return joined;
}

std::optional<std::string> scalar_text(const YAML::Node& node, const std::string& path,
                                       ReadContext& context) {
  if (!node.IsScalar()) {
    context.diagnostics.error(location_of(node), path + ": expected a single value, not " +
                                                     (node.IsMap() ? "a mapping" : "a list"));
    return std::nullopt;
  }
  std::string problem;
  std::optional<std::string> expanded =
      expand_environment(node.Scalar(), context.environment, problem);
  if (!expanded) {
    context.diagnostics.error(location_of(node), path + ": " + problem);
  }
  return expanded;
}

MapReader::MapReader(const YAML::Node& node, std::string path,
                     std::vector<std::string_view> accepted, ReadContext& context)
    : node_(node), path_(std::move(path)), context_(context) {
  if (!node.IsMap()) {
    if (!node.IsNull()) {  // an empty value is an empty mapping
      context_.diagnostics.error(location_of(node), path_ + ": expected a mapping of keys");
    }
    return;
  }
  valid_ = true;
  std::vector<std::pair<std::string, Location>> seen;
  for (const auto& entry : node) {
    const std::string key = entry.first.Scalar();
    const Location where = location_of(entry.first);
    for (const auto& [earlier, earlier_at] : seen) {
      if (earlier == key) {
        context_.diagnostics.error(where, this->path(key) + ": duplicate key (first at line " +
                                              std::to_string(earlier_at.line) + ")");
      }
    }
    seen.emplace_back(key, where);
    bool known = false;
    for (const std::string_view name : accepted) {
      known = known || name == key;
    }
    if (!known) {
      std::string message =
          (path_.empty() ? std::string() : path_ + ": ") + "unknown key \"" + key + "\"";
      if (const auto suggestion = closest_word(key, accepted)) {
        message += " (did you mean \"" + std::string(*suggestion) + "\"?)";
      }
      message += "; accepted keys: " + join_words(accepted);
      context_.diagnostics.error(where, message);
    }
  }
}

bool MapReader::has(std::string_view key) const {
  return valid_ && node_[std::string(key)].IsDefined();
}

YAML::Node MapReader::node(std::string_view key) const {
  return valid_ ? node_[std::string(key)] : YAML::Node();
}

std::optional<MapReader> MapReader::section(std::string_view key,
                                            std::vector<std::string_view> accepted) const {
  if (!has(key)) {
    return std::nullopt;
  }
  return MapReader(node(key), path(key), std::move(accepted), context_);
}

Location MapReader::at(std::string_view key) const {
  return has(key) ? location_of(node(key)) : at();
}

std::string MapReader::path(std::string_view key) const {
  return path_.empty() ? std::string(key) : path_ + "." + std::string(key);
}

bool MapReader::require(std::string_view key) {
  if (has(key)) {
    return true;
  }
  context_.diagnostics.error(at(), path(key) + ": missing");
  return false;
}

void MapReader::error(std::string_view key, const std::string& message) {
  context_.diagnostics.error(at(key), path(key) + ": " + message);
}

std::optional<std::string> MapReader::text(std::string_view key) {
  if (!has(key)) {
    return std::nullopt;
  }
  return scalar_text(node(key), path(key), context_);
}

std::optional<std::uint64_t> MapReader::whole_number(std::string_view key, std::uint64_t minimum,
                                                     std::uint64_t maximum) {
  const std::optional<std::string> word = text(key);
  if (!word) {
    return std::nullopt;
  }
  std::uint64_t value = 0;
  const auto [end, problem] = std::from_chars(word->data(), word->data() + word->size(), value);
  if (problem != std::errc{} || end != word->data() + word->size() || value < minimum ||
      value > maximum) {
    error(key, "\"" + *word + "\" is not a whole number from " + std::to_string(minimum) + " to " +
                   std::to_string(maximum));
    return std::nullopt;
  }
  return value;
}

std::optional<double> MapReader::number(std::string_view key, double minimum) {
  const std::optional<std::string> word = text(key);
  if (!word) {
    return std::nullopt;
  }
  double value = 0;
  const auto [end, problem] = std::from_chars(word->data(), word->data() + word->size(), value);
  if (problem != std::errc{} || end != word->data() + word->size() || !std::isfinite(value) ||
      value < minimum) {
    error(key, "\"" + *word + "\" is not a number of at least " + limiter::format_number(minimum));
    return std::nullopt;
  }
  return value;
}

std::optional<limiter::Duration> MapReader::duration(std::string_view key) {
  const std::optional<std::string> word = text(key);
  if (!word) {
    return std::nullopt;
  }
  const std::optional<limiter::Duration> value = parse_duration(*word);
  if (!value) {
    error(key, "\"" + *word + "\" is not a duration; " + std::string(kDurationHelp));
  }
  return value;
}

std::optional<limiter::Rate> MapReader::rate(std::string_view key) {
  const std::optional<std::string> word = text(key);
  if (!word) {
    return std::nullopt;
  }
  const std::optional<limiter::Rate> value = parse_rate(*word);
  if (!value) {
    error(key, "\"" + *word + "\" is not a rate; " + std::string(kRateHelp));
  }
  return value;
}

std::optional<bool> MapReader::flag(std::string_view key) {
  return choice<bool>(key, {{"true", true}, {"false", false}});
}

std::vector<std::pair<std::string, Location>> MapReader::located_texts(std::string_view key) {
  std::vector<std::pair<std::string, Location>> items;
  if (!has(key)) {
    return items;
  }
  const YAML::Node list = node(key);
  if (list.IsScalar()) {
    if (std::optional<std::string> one = text(key)) {
      items.emplace_back(std::move(*one), at(key));
    }
    return items;
  }
  if (!list.IsSequence()) {
    error(key, "expected a list");
    return items;
  }
  for (std::size_t i = 0; i < list.size(); ++i) {
    if (std::optional<std::string> item =
            scalar_text(list[i], path(key) + "[" + std::to_string(i) + "]", context_)) {
      items.emplace_back(std::move(*item), location_of(list[i]));
    }
  }
  return items;
}

std::optional<std::vector<std::string>> MapReader::texts(std::string_view key) {
  if (!has(key)) {
    return std::nullopt;
  }
  const std::size_t problems_before = context_.diagnostics.count();
  std::vector<std::string> items;
  for (auto& [item, where] : located_texts(key)) {
    items.push_back(std::move(item));
  }
  return context_.diagnostics.count() == problems_before ? std::optional(std::move(items))
                                                         : std::nullopt;
}

void MapReader::report_not_one_of(std::string_view key, const std::string& word,
                                  const std::vector<std::string_view>& accepted) {
  std::string message = "\"" + word + "\" is not one of " + join_words(accepted);
  if (const auto suggestion = closest_word(word, accepted)) {
    message += " (did you mean \"" + std::string(*suggestion) + "\"?)";
  }
  error(key, message);
}

}  // namespace sluice::config
