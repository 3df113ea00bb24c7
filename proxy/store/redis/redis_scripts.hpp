#pragma once

#include <string_view>

namespace sluice::store::redis {

/// The Redis store's Lua scripts, compiled in from proxy/lua/ at build time.
/// decide: common.lua, draining_level.lua, one file per algorithm, then decide.lua's driver.
std::string_view decide_script() noexcept;
/// release.lua: gives back a request's concurrency permits.
std::string_view release_script() noexcept;

}  // namespace sluice::store::redis
