#pragma once

#include <string_view>

namespace sluice::store::redis {

/// The Redis store's Lua code, compiled in from proxy/store/redis/lua/ at build time: common.lua,
/// draining_level.lua, one file per algorithm, decide.lua (many requests' decisions in one call)
/// release.lua (a finished request's concurrency permits) and refund.lua.

/// For Redis 7 and later: a function library (FUNCTION LOAD) named after a hash of the code, and
/// its two functions (FCALL).
std::string_view library() noexcept;
std::string_view decide_function() noexcept;
std::string_view release_function() noexcept;
/// On a Redis Cluster (functions only): decide with the keys as arguments, and take back the
/// charges of a request refused on another master (refund.lua).
std::string_view decide_cluster_function() noexcept;
std::string_view refund_function() noexcept;

/// For Redis before 7: the same code as two scripts (SCRIPT LOAD, EVALSHA).
std::string_view decide_script() noexcept;
std::string_view release_script() noexcept;
/// Their SHA1s, which EVALSHA names them by.
std::string_view decide_sha() noexcept;
std::string_view release_sha() noexcept;

}  // namespace sluice::store::redis
