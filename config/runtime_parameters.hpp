#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "limiter/limiter_options.hpp"

namespace sluice::config {

/// Parameters given to one key at runtime (SPEC §10 `PUT /limiters/NAME/KEY`): `text`, a JSON
/// object (`{"limit": 1000}`), laid over the limiter's `options` and read and checked exactly as
/// an `overrides` entry of proxy.yaml is: same names, units and rules. nullopt, with every
/// problem naming its parameter ("limit: must be at least 1, got 0"), when they do not hold.
std::optional<limiter::LimiterOptions> read_runtime_parameters(
    std::string_view text, const limiter::LimiterOptions& options,
    std::vector<std::string>& problems);

}  // namespace sluice::config
