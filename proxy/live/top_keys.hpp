#pragma once

#include <cstddef>

#include "limiter/clock.hpp"
#include "proxy/live/generation.hpp"
#include "proxy/pipeline/pipeline.hpp"
#include "proxy/pipeline/request_view.hpp"

namespace sluice::live {

/// Counts a concluded request in the heaviest-keys summaries of the limiters that applied to it
/// (nothing when `top_keys` is 0): a hash lookup per limiter; a key's text is formed again and
/// copied only when the key enters a summary, and a secret key's never. Called on `loop`'s
/// thread.
void count_top_keys(const Generation& generation, std::size_t loop,
                    const pipeline::Decision& decision, const pipeline::RequestView& request,
                    limiter::TimePoint now);

/// Whether a limiter's key holds a secret (bearer, cookie, header or query value): then it is
/// shown as its hash, never as its text.
bool secret_key(const config::KeySpec& key) noexcept;

}  // namespace sluice::live
