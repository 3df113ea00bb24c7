#pragma once

#include <ostream>

#include "config/proxy_config.hpp"

namespace sluice::cli {

/// `sluice check`: the routes and limiters of a valid config, as tables a person can read.
void print_config_summary(const config::ProxyConfig& config, std::ostream& out);

}  // namespace sluice::cli
