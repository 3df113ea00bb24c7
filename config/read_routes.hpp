#pragma once

#include <vector>

#include "config/proxy_config.hpp"
#include "config/yaml_reader.hpp"

namespace sluice::config {

/// Reads the `routes` list and checks it against the limiters: names known and not repeated,
/// costs that each limiter can admit, an upstream for every route that does not answer itself,
/// and no route that an earlier one makes unreachable.
/// `upstream_given`: the top level names an upstream (valid or not: if not, that is reported
/// there, not again for every route).
std::vector<Route> read_routes(const YAML::Node& node, const ProxyConfig& config,
                               bool upstream_given, ReadContext& context);

}  // namespace sluice::config
