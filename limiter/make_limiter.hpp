#pragma once

#include <memory>

#include "limiter/limiter.hpp"
#include "limiter/limiter_options.hpp"

namespace sluice::limiter {

/// Builds the limiter that `options` describe, on the in-memory store. Throws
/// std::invalid_argument naming the parameter and its value when a parameter is invalid
/// ("limit must be at least 1, got 0").
std::unique_ptr<Limiter> make_limiter(const LimiterOptions& options);

/// Throws std::invalid_argument when `cost` can never be admitted by `limiter`.
void require_admissible(const Limiter& limiter, Permits cost);

}  // namespace sluice::limiter
