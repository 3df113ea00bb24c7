#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "config/diagnostics.hpp"
#include "config/proxy_config.hpp"
#include "limiter/limiter_options.hpp"

namespace sluice::config {

/// Reads an envoyproxy/ratelimit configuration file's text, unchanged (`domain`, nested
/// `descriptors`, `rate_limit: {unit, requests_per_unit, name, replaces, unlimited}`,
/// `shadow_mode`), as one `rls` domain (SPEC §11). Every descriptor with a `rate_limit` becomes a
/// rule whose entries are the (key, value) path from the top to it, and its limit a limiter of its
/// own appended to `limiters`: named "rls:DOMAIN.PATH", PATH being envoyproxy/ratelimit's own
/// key for it ("rls:edge.key_1_value_1.user"), counting with `algorithm` (its fixed windows,
/// aligned to the epoch, by default). Problems go to `diagnostics`, which names the file; nullopt
/// when there was any.
std::optional<RlsDomain> read_envoy_ratelimit(std::string_view yaml, const std::string& file,
                                              limiter::AlgorithmKind algorithm,
                                              std::uint64_t max_keys,
                                              std::vector<LimiterConfig>& limiters,
                                              Diagnostics& diagnostics);

/// The length of an envoyproxy/ratelimit `unit` (second, minute, hour, day, week, month, year,
/// any case), as that project counts it: a week is 7 days, a month 30, a year 365.
std::optional<limiter::Duration> envoy_unit_length(std::string_view unit);

}  // namespace sluice::config
