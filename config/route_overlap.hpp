#pragma once

#include "config/proxy_config.hpp"

namespace sluice::config {

/// Whether every request that `later` matches is also matched by `earlier`, so that `later`,
/// placed after it, can never be reached (first match wins). Decided only where it can be
/// decided exactly: two different regexes are never said to cover one another.
bool covers(const RouteMatch& earlier, const RouteMatch& later);

}  // namespace sluice::config
