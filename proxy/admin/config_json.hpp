#pragma once

#include <string>

#include "config/proxy_config.hpp"

namespace sluice::admin {

/// The effective configuration as JSON, for the admin port's GET /config: defaults filled in,
/// durations and rates in the file's notation. Secrets are redacted: the password in the Redis
/// URL, and the values of overrides keyed by a header, bearer token or cookie.
std::string config_json(const config::ProxyConfig& config);

}  // namespace sluice::admin
