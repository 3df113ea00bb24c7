#pragma once

#include <atomic>
#include <string>
#include <string_view>
#include <utility>

#include "limiter/time.hpp"
#include "proxy/io/net.hpp"
#include "proxy/store/redis/redis_connection.hpp"

namespace sluice::store::redis {

/// The store's Lua code on Redis (redis_scripts.hpp): loaded on every connection, as a function
/// library where Redis has functions (7 and later), else as scripts; and the commands that run
/// it. Shared by the loops: their connections all lead to one Redis (or cluster), so what the
/// last load found holds for all of them.
class RedisCode {
 public:
  /// `cluster`: decide with the cluster's function, and refuse a Redis without functions (its
  /// scripts cannot take keys of many slots).
  explicit RedisCode(bool cluster) noexcept : cluster_(cluster) {}

  /// Loads decide.lua and release.lua on `connection`. False, with the reason in `why`, when
  /// Redis refused.
  io::Awaitable<bool> load(RedisConnection& connection, limiter::Duration timeout,
                           std::string& why);

  /// Whether Redis took the code as a function library, not as scripts.
  bool uses_functions() const noexcept { return functions_; }
  /// The command and its target (function name or SHA1) that run decide.lua or release.lua.
  std::pair<std::string_view, std::string_view> decide_command() const noexcept;
  std::pair<std::string_view, std::string_view> release_command() const noexcept;

 private:
  bool cluster_;
  std::atomic<bool> functions_{true};  ///< Set by every load.
};

/// Whether an error reply says Redis has forgotten the code (SCRIPT FLUSH, FUNCTION FLUSH, a
/// failover to a node that never had it): load it again.
bool code_missing(std::string_view error) noexcept;

}  // namespace sluice::store::redis
