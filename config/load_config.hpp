#pragma once

#include <string>
#include <string_view>

#include "config/env_expand.hpp"
#include "config/proxy_config.hpp"

namespace sluice::config {

/// Reads and validates a config (SPEC §2). Throws ConfigError listing every problem found, each
/// as FILE:LINE:COL with the key's path and the accepted values. Never crashes on bad input.
ProxyConfig load_config(const std::string& file,
                        const Environment& environment = process_environment);

/// The same from text; `file` names it in messages.
ProxyConfig parse_config(std::string_view yaml, const std::string& file,
                         const Environment& environment = process_environment);

}  // namespace sluice::config
