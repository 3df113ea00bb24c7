#pragma once

#include <optional>
#include <string_view>
#include <vector>

#include "config/proxy_config.hpp"
#include "config/yaml_reader.hpp"

namespace sluice::config {

/// Reads the `limiters` mapping: every limiter's algorithm, parameters, key and options, each
/// checked by building the limiter it describes (so the engine's own rules apply).
std::vector<LimiterConfig> read_limiters(const YAML::Node& node, std::uint64_t max_keys,
                                         ReadContext& context);

/// One part of a key ("header:X-User", "jwt:org.id"); nullopt when it is not one.
std::optional<KeyPart> parse_key_part(std::string_view text);

/// Parses a key ("ip+header:X-User"); nullopt and a message when it is not one.
std::optional<KeySpec> parse_key(std::string_view text, std::string& problem);

}  // namespace sluice::config
