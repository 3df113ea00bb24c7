#include "proxy/store/redis/redis_code.hpp"

#include <array>

#include "proxy/store/redis/redis_scripts.hpp"

namespace sluice::store::redis {
namespace {

/// Whether an error reply says Redis has no functions (before 7): scripts are used instead.
bool no_functions(std::string_view error) { return error.find("unknown command") != error.npos; }

}  // namespace

bool code_missing(std::string_view error) noexcept {
  return error.starts_with("NOSCRIPT") || error.find("Function not found") != error.npos;
}

io::Awaitable<bool> RedisCode::load(RedisConnection& connection, limiter::Duration timeout,
                                    std::string& why) {
  const std::array<std::string_view, 4> function_load{"FUNCTION", "LOAD", "REPLACE", library()};
  const RedisReply loaded = co_await connection.command(function_load, timeout);
  if (!loaded.error && !loaded.value.is_error()) {
    functions_ = true;
    co_return true;
  }
  if (loaded.error || !no_functions(loaded.value.text) || cluster_) {
    why = reason_of(loaded);
    if (cluster_ && !loaded.error && no_functions(loaded.value.text)) {
      why += " (a cluster needs Redis 7 or later: its functions take keys of many slots)";
    }
    co_return false;
  }
  for (const std::string_view script : {decide_script(), release_script()}) {
    const std::array<std::string_view, 3> script_load{"SCRIPT", "LOAD", script};
    const RedisReply reply = co_await connection.command(script_load, timeout);
    if (reply.error || reply.value.is_error()) {
      why = reason_of(reply);
      co_return false;
    }
  }
  functions_ = false;
  co_return true;
}

std::pair<std::string_view, std::string_view> RedisCode::decide_command() const noexcept {
  if (cluster_) {
    return {"FCALL", decide_cluster_function()};
  }
  return functions_ ? std::pair{std::string_view("FCALL"), decide_function()}
                    : std::pair{std::string_view("EVALSHA"), decide_sha()};
}

std::pair<std::string_view, std::string_view> RedisCode::release_command() const noexcept {
  return functions_ ? std::pair{std::string_view("FCALL"), release_function()}
                    : std::pair{std::string_view("EVALSHA"), release_sha()};
}

}  // namespace sluice::store::redis
