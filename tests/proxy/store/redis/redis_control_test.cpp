// The Redis store's runtime control on a real redis-server: the shared tables, and a key
// forgotten in Redis for every replica.
#include <gtest/gtest.h>

#include <string>

#include "proxy/store/redis/redis_store.hpp"
#include "tests/proxy/store/redis/redis_test_helpers.hpp"
#include "tests/support/redis_cluster.hpp"
#include "tests/support/redis_server.hpp"
#include "tests/support/redis_store_fixture.hpp"

namespace sluice::store::redis {
namespace {

using namespace std::chrono_literals;
using ControlRows = std::vector<std::pair<std::string, std::string>>;

TEST(RedisControl, WritesReadsAndDeletesTheSharedTables) {
  const test::RedisServer server;
  test::StoreFixture fixture(test::kTwoPerHour, "url: \"" + server.url() + "\"");
  RedisStore& store = fixture.store();
  EXPECT_TRUE(store.shares_control());
  fixture.loop().run([&]() -> io::Awaitable<void> {
    EXPECT_FALSE(co_await store.write_control(0, "bans", "192.0.2.1", "{\"expires_at\":1}"));
    EXPECT_TRUE(co_await store.write_control(0, "bans", "192.0.2.1", "{\"expires_at\":2}"));
    co_await store.write_control(0, "bans", "192.0.2.2", "{\"expires_at\":3}");
    ControlRows rows = co_await store.read_control(0, "bans");
    std::sort(rows.begin(), rows.end());
    EXPECT_EQ(rows, (ControlRows{{"192.0.2.1", "{\"expires_at\":2}"},
                                 {"192.0.2.2", "{\"expires_at\":3}"}}));
    EXPECT_TRUE(co_await store.write_control(0, "bans", "192.0.2.1", std::nullopt));
    EXPECT_FALSE(co_await store.write_control(0, "bans", "192.0.2.1", std::nullopt));
    EXPECT_EQ((co_await store.read_control(0, "bans")).size(), 1U);
    EXPECT_TRUE((co_await store.read_control(0, "overrides")).empty());
  });
}

TEST(RedisControl, AForgottenKeyFindsAFullBudgetInRedis) {
  const test::RedisServer server;
  test::StoreFixture fixture(test::kTwoPerHour, "url: \"" + server.url() + "\"");
  const test::PipelineFixture::Request client{.peer = "192.0.2.7"};
  const test::PipelineFixture::Request other{.peer = "192.0.2.8"};
  for (int i = 0; i < 2; ++i) {
    EXPECT_EQ(fixture.redis(client, std::nullopt).outcome, pipeline::Outcome::allowed);
    EXPECT_EQ(fixture.redis(other, std::nullopt).outcome, pipeline::Outcome::allowed);
  }
  EXPECT_EQ(fixture.redis(client, std::nullopt).outcome, pipeline::Outcome::limited);

  const auto definitions =
      fixture.shared_pipeline().forget("per-ip", "192.0.2.7", limiter::SystemClock().now());
  ASSERT_TRUE(definitions.has_value());
  fixture.loop().run([&]() -> io::Awaitable<void> {
    co_await fixture.store().forget(0, "per-ip", *definitions,
                                    limiter::hash_key("192.0.2.7", pipeline::kSharedKeySeed));
  });
  fixture.loop().poll();  // the loop's over-limit cache lets the key go

  EXPECT_EQ(fixture.redis(client, std::nullopt).outcome, pipeline::Outcome::allowed);
  EXPECT_EQ(fixture.redis(client, std::nullopt).outcome, pipeline::Outcome::allowed);
  EXPECT_EQ(fixture.redis(client, std::nullopt).outcome, pipeline::Outcome::limited);
  EXPECT_EQ(fixture.redis(other, std::nullopt).outcome, pipeline::Outcome::limited);
}

TEST(RedisControl, AnotherReplicaLetsGoOfAForgottenKeyItRemembersAsOverItsLimit) {
  const test::RedisServer server;
  test::StoreFixture one(test::kTwoPerHour, "url: \"" + server.url() + "\"");
  test::StoreFixture two(test::kTwoPerHour, "url: \"" + server.url() + "\"");
  const test::PipelineFixture::Request client{.peer = "192.0.2.7"};
  EXPECT_EQ(two.redis(client, std::nullopt).outcome, pipeline::Outcome::allowed);
  EXPECT_EQ(two.redis(client, std::nullopt).outcome, pipeline::Outcome::allowed);
  EXPECT_EQ(two.redis(client, std::nullopt).outcome, pipeline::Outcome::limited);
  two.loop().run([&]() -> io::Awaitable<void> { co_await two.store().follow_forgotten(0); });

  const auto definitions =
      one.shared_pipeline().forget("per-ip", "192.0.2.7", limiter::SystemClock().now());
  one.loop().run([&]() -> io::Awaitable<void> {
    co_await one.store().forget(0, "per-ip", *definitions,
                                limiter::hash_key("192.0.2.7", pipeline::kSharedKeySeed));
  });
  // Two still answers from its over-limit cache, without asking Redis, until it follows.
  EXPECT_EQ(two.redis(client, std::nullopt).outcome, pipeline::Outcome::limited);
  two.loop().run([&]() -> io::Awaitable<void> { co_await two.store().follow_forgotten(0); });
  two.loop().poll();
  EXPECT_EQ(two.redis(client, std::nullopt).outcome, pipeline::Outcome::allowed);
}

TEST(RedisControl, OnAClusterEachKeyIsForgottenOnTheMasterOfItsSlot) {
  test::RedisCluster cluster(3);
  test::StoreFixture fixture(test::kPerUserYaml, test::cluster_store(cluster, "timeout: 1s"));
  constexpr std::size_t kUsers = 30;  // spread over the three masters
  for (std::size_t u = 0; u < kUsers; ++u) {
    const test::PipelineFixture::Request request = test::of_user(test::user(u));
    for (int i = 0; i < 3; ++i) {
      EXPECT_EQ(fixture.redis(request, std::nullopt).outcome, pipeline::Outcome::allowed);
    }
    EXPECT_EQ(fixture.redis(request, std::nullopt).outcome, pipeline::Outcome::limited);
  }
  for (std::size_t node = 0; node < cluster.size(); ++node) {
    EXPECT_GT(cluster.keys_on(node), 0U) << "master " << node << " holds no key";
  }

  for (std::size_t u = 0; u < kUsers; ++u) {
    const std::string& name = test::user(u);
    const auto definitions =
        fixture.shared_pipeline().forget("per-user", name, limiter::SystemClock().now());
    fixture.loop().run([&]() -> io::Awaitable<void> {
      co_await fixture.store().forget(0, "per-user", *definitions,
                                      limiter::hash_key(name, pipeline::kSharedKeySeed));
    });
  }
  fixture.loop().poll();

  for (std::size_t u = 0; u < kUsers; ++u) {
    EXPECT_EQ(fixture.redis(test::of_user(test::user(u)), std::nullopt).outcome,
              pipeline::Outcome::allowed)
        << test::user(u);
  }
  // The shared tables live on their own slot's master, wherever that is.
  fixture.loop().run([&]() -> io::Awaitable<void> {
    co_await fixture.store().write_control(0, "overrides", "per-user\nuser-1", "{}");
    EXPECT_EQ((co_await fixture.store().read_control(0, "overrides")).size(), 1U);
  });
}

}  // namespace
}  // namespace sluice::store::redis
