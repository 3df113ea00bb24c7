#pragma once

#include <chrono>
#include <ostream>

#include "config/proxy_config.hpp"

namespace sluice::cli {

/// `sluice health`: asks the admin port of a running proxy (the config's `admin` address; a
/// wildcard address is asked on loopback) for /healthz, so that a container's HEALTHCHECK needs
/// no curl in the image. True when it answers 200 within `timeout`; otherwise says why on `err`.
bool check_health(const config::ProxyConfig& config, std::chrono::milliseconds timeout,
                  std::ostream& err);

}  // namespace sluice::cli
