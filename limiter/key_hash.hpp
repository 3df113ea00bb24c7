#pragma once

#include <cstdint>
#include <string_view>

namespace sluice::limiter {

/// A limiter key, reduced to 64 bits. Limiters store only this, never the key's text, so a
/// tracked key costs the same whatever its length and secrets (tokens, cookies) are not kept.
/// Never 0 (0 marks an empty table slot).
using KeyHash = std::uint64_t;

/// Keyed 64-bit hash of `key`. The seed is drawn at random once per process, so that clients
/// cannot craft keys that collide (hash flooding). Thread-safe, allocation-free.
KeyHash hash_key(std::string_view key) noexcept;

/// Same with an explicit seed, for tests that need reproducible values.
KeyHash hash_key(std::string_view key, std::uint64_t seed) noexcept;

}  // namespace sluice::limiter
