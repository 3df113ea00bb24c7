// The store's Lua code on a real redis-server started by the test: a function library where Redis
// has functions, scripts where it has not (FUNCTION renamed away, as on Redis 6), none on a
// cluster without functions, and the commands that run it. Loading it again after a flush is
// tested where it happens (redis_batching_test.cpp, permit_releases_test.cpp).
#include "proxy/store/redis/redis_code.hpp"

#include <gtest/gtest.h>

#include <array>
#include <chrono>
#include <string>

#include "proxy/store/redis/redis_scripts.hpp"
#include "tests/proxy/store/redis/redis_test_helpers.hpp"
#include "tests/support/event_loop.hpp"
#include "tests/support/redis_server.hpp"

namespace sluice::store::redis {
namespace {

using namespace std::chrono_literals;

/// Loads `code` on a connection of its own to `server`; false, with `why`, when Redis refused.
/// `exists`: what SCRIPT EXISTS then says of decide.lua's script.
bool load_on(const test::RedisServer& server, RedisCode& code, std::string& why,
             long long* exists = nullptr) {
  test::EventLoop loop;
  bool loaded = false;
  loop.run([&]() -> io::Awaitable<void> {
    const config::RedisOptions options = test::redis_options("url: \"" + server.url() + "\"");
    auto connection = co_await RedisConnection::open(options.endpoint, options.url, 1s);
    loaded = co_await code.load(*connection, 1s, why);
    if (exists != nullptr) {
      const std::array<std::string_view, 3> script_exists{"SCRIPT", "EXISTS", decide_sha()};
      const RedisReply reply = co_await connection->command(script_exists, 1s);
      *exists = reply.value.elements.empty() ? -1 : reply.value.elements[0].integer;
    }
    connection->close();
  });
  return loaded;
}

TEST(RedisCode, LoadsAFunctionLibraryWhereRedisHasFunctions) {
  const test::RedisServer server;
  RedisCode code(false);
  std::string why;
  ASSERT_TRUE(load_on(server, code, why)) << why;
  EXPECT_TRUE(code.uses_functions());
  EXPECT_EQ(code.decide_command(), std::pair(std::string_view("FCALL"), decide_function()));
  EXPECT_EQ(code.release_command(), std::pair(std::string_view("FCALL"), release_function()));
  // On a cluster, decide.lua takes its keys as arguments.
  RedisCode cluster(true);
  EXPECT_EQ(cluster.decide_command(),
            std::pair(std::string_view("FCALL"), decide_cluster_function()));
}

TEST(RedisCode, LoadsScriptsWhereRedisHasNoFunctions) {
  const auto server = test::redis_with("scripts");
  RedisCode code(false);
  std::string why;
  long long exists = -1;
  ASSERT_TRUE(load_on(*server, code, why, &exists)) << why;
  EXPECT_FALSE(code.uses_functions());
  EXPECT_EQ(exists, 1);
  EXPECT_EQ(code.decide_command(), std::pair(std::string_view("EVALSHA"), decide_sha()));
  EXPECT_EQ(code.release_command(), std::pair(std::string_view("EVALSHA"), release_sha()));
}

TEST(RedisCode, AClusterWithoutFunctionsIsRefusedSayingWhy) {
  const auto server = test::redis_with("scripts");
  RedisCode code(true);
  std::string why;
  EXPECT_FALSE(load_on(*server, code, why));
  EXPECT_NE(why.find("a cluster needs Redis 7 or later"), std::string::npos) << why;
}

TEST(RedisCode, KnowsTheErrorsOfCodeRedisHasForgotten) {
  EXPECT_TRUE(code_missing("NOSCRIPT No matching script. Please use EVAL."));
  EXPECT_TRUE(code_missing("ERR Function not found"));
  EXPECT_FALSE(code_missing("WRONGTYPE Operation against a key holding the wrong kind of value"));
  EXPECT_FALSE(code_missing(""));
}

}  // namespace
}  // namespace sluice::store::redis
