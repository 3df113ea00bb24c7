#pragma once

#include <string>
#include <vector>

#include "config/proxy_config.hpp"
#include "config/yaml_reader.hpp"

namespace sluice::config {

/// Reads `rls` (SPEC §11), a list of domains: `{domain, descriptors: [...]}` whose rules name
/// limiters of `limiters` (or are `unlimited`), or `{envoy_config: FILE, algorithm}`, an
/// envoyproxy/ratelimit file read unchanged, whose limits become limiters appended to
/// `config.limiters`. Read after the limiters. Checks that each named limiter exists and can
/// decide without knowing how the request ends, that no two rules of a domain ask for the same
/// entries, and that no domain is given twice.
std::vector<RlsDomain> read_rls(MapReader& top, ProxyConfig& config, ReadContext& context);

/// Why `limiter` cannot decide a request whose end is never known (the decide port's): it is a
/// `concurrency` limiter, or charged after the response (`cost: response`, `count_if`). Empty
/// when it can.
std::string needs_end_of_request(const LimiterConfig& limiter);

}  // namespace sluice::config
