// A loop's lanes to Redis, against a real redis-server started by the test: connections used in
// turn, a failure opening the node's breaker, a probe closing it, a broken connection replaced
// and a restarted Redis found again; then through the store, a connection that only times out
// replaced, and one that answers again kept.
#include "proxy/store/redis/redis_lanes.hpp"

#include <gtest/gtest.h>

#include <chrono>

#include "tests/proxy/store/redis/redis_test_helpers.hpp"
#include "tests/support/redis_server.hpp"
#include "tests/support/redis_store_fixture.hpp"

namespace sluice::store::redis {
namespace {

using namespace std::chrono_literals;
using test::connections_received;
using test::kTwoPerHour;
using test::StoreFixture;
using test::time_to_recover;
using test::timed;
using test::timing_out_after_100ms;

std::string lanes_store(const test::RedisServer& server) {
  return "url: \"" + server.url() + "\", timeout: 100ms";
}

TEST(RedisLanes, PicksTheConnectionsOfALaneInTurn) {
  const test::RedisServer server;
  test::LoopParts redis(lanes_store(server), 2);
  redis.open();
  Lane& lane = redis.loop.lanes[0];
  RedisConnection* const first = redis.loop.lanes.pick(lane);
  RedisConnection* const second = redis.loop.lanes.pick(lane);
  ASSERT_NE(first, nullptr);
  ASSERT_NE(second, nullptr);
  EXPECT_NE(first, second);
  EXPECT_EQ(redis.loop.lanes.pick(lane), first);
  EXPECT_EQ(redis.loop.lanes.serving(), 1U);
}

TEST(RedisLanes, AFailureOpensTheNodesBreakerOnceAndCountsTheRequestsItCost) {
  test::LoopParts redis("url: \"redis://127.0.0.1:1\"");  // never opened: no socket
  Lane& lane = redis.loop.lanes[0];
  const std::uint64_t before = lane.node.breaker.ticket();
  redis.loop.lanes.failed(lane, "a test", 3);
  EXPECT_EQ(redis.loop.errors.value(), 3U);
  EXPECT_TRUE(lane.node.breaker.is_open());
  EXPECT_FALSE(redis.nodes.available());
  // An answer to a call sent before the failure says nothing of Redis now.
  redis.loop.lanes.answered(lane, before);
  EXPECT_TRUE(lane.node.breaker.is_open());
  redis.loop.lanes.answered(lane, lane.node.breaker.ticket());
  EXPECT_FALSE(lane.node.breaker.is_open());
  EXPECT_TRUE(redis.nodes.available());
}

TEST(RedisLanes, AProbeClosesTheBreakerOfANodeThatAnswers) {
  const test::RedisServer server;
  test::LoopParts redis(lanes_store(server));
  redis.open();
  Lane& lane = redis.loop.lanes[0];
  redis.loop.lanes.failed(lane, "a test");
  ASSERT_TRUE(lane.node.breaker.is_open());
  redis.events.run([&] { return redis.loop.lanes.probe(); });
  EXPECT_FALSE(lane.node.breaker.is_open());
}

TEST(RedisLanes, ReplacesABrokenConnectionAndFindsARestartedRedisWithinASecond) {
  test::RedisServer server;
  test::LoopParts redis(lanes_store(server));
  redis.open();
  RedisLanes& lanes = redis.loop.lanes;
  Lane& lane = lanes[0];
  server.kill();
  // The connection breaks; picking it replaces it, and the lane reconnects in the background.
  const auto deadline = std::chrono::steady_clock::now() + 5s;
  while (lanes.pick(lane) != nullptr && std::chrono::steady_clock::now() < deadline) {
    redis.events.run_for(10ms);
  }
  ASSERT_EQ(lanes.pick(lane), nullptr);
  redis.events.run_for(300ms);  // attempts that fail, backing off
  server.start();
  const auto restarted = std::chrono::steady_clock::now();
  while (lanes.pick(lane) == nullptr && std::chrono::steady_clock::now() - restarted < 3s) {
    redis.events.run_for(10ms);
  }
  EXPECT_NE(lanes.pick(lane), nullptr);
  EXPECT_LT(std::chrono::steady_clock::now() - restarted, 1s);
}

TEST(RedisLanes, ReplacesAConnectionWhoseCommandsOnlyTimeOut) {
  test::RedisServer server;
  StoreFixture fixture(kTwoPerHour, timing_out_after_100ms(server, "allow"));
  EXPECT_EQ(timed(fixture).first.outcome, pipeline::Outcome::allowed);
  const long long before = connections_received(fixture);
  ASSERT_GT(before, 0);
  server.pause();
  // The first request times out and opens the breaker; the probes that follow time out too.
  // The third timeout in a row on the loop's one connection replaces it.
  const auto started = std::chrono::steady_clock::now();
  while (fixture.store().errors() < RedisLanes::kTimeoutsBeforeReplacing &&
         std::chrono::steady_clock::now() - started < 10s) {
    fixture.loop().run_for(10ms);
    timed(fixture);
  }
  ASSERT_GE(fixture.store().errors(), RedisLanes::kTimeoutsBeforeReplacing);
  server.resume();
  EXPECT_LT(time_to_recover(fixture, 3s), 1s);
  // The new connection, and this count's own: without the replacement, only the latter.
  EXPECT_GE(connections_received(fixture) - before, 2);
}

TEST(RedisLanes, KeepsAConnectionThatTimedOutButAnswersAgain) {
  test::RedisServer server;
  StoreFixture fixture(kTwoPerHour, timing_out_after_100ms(server, "allow"));
  EXPECT_EQ(timed(fixture).first.outcome, pipeline::Outcome::allowed);
  const long long before = connections_received(fixture);
  server.pause();
  timed(fixture);  // one timeout: the breaker opens
  server.resume();
  EXPECT_LT(time_to_recover(fixture, 3s), 1s);
  EXPECT_EQ(connections_received(fixture) - before, 1);  // only this count's own
}

}  // namespace
}  // namespace sluice::store::redis
