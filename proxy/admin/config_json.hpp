#pragma once

#include <string>

#include "config/proxy_config.hpp"

namespace sluice::admin {

/// The effective configuration as JSON, for the admin port's GET /config: defaults filled in,
/// durations and rates in the file's notation. Secrets are redacted: the password in the Redis
/// URL, and the values of overrides keyed by a header, bearer token or cookie.
/// `lease_holders`: the event loops of all replicas that lease (the store counts them), for the
/// leased limiters' overshoot bound.
std::string config_json(const config::ProxyConfig& config, std::uint64_t lease_holders = 1);

}  // namespace sluice::admin
