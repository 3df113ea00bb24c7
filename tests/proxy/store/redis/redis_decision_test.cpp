// The decision script's reply read on its own, without a Redis server (redis_store_test.cpp runs
// the scripts themselves).
#include "proxy/store/redis/redis_decision.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <string_view>

#include "proxy/store/redis/resp.hpp"

namespace sluice::store::redis {
namespace {

using namespace std::chrono_literals;

RespValue reply_of(std::string_view bytes) {
  RespReader reader;
  reader.feed(bytes);
  return reader.next().value_or(RespValue{});
}

TEST(ReadDecision, ReadsEachChargesOutcomeInMicroseconds) {
  pipeline::Charges charges;
  charges.count = 1;
  charges.live = 1;
  pipeline::ChargeResult result;
  ASSERT_TRUE(read_decision(reply_of("*6\r\n:1\r\n:1\r\n:1500\r\n:0\r\n:9\r\n:17000000\r\n"),
                            charges, result));
  EXPECT_TRUE(result.live_admitted);
  EXPECT_TRUE(result.outcomes[0].verdict.admitted);
  EXPECT_EQ(result.outcomes[0].verdict.hold, 1500us);
  EXPECT_EQ(result.outcomes[0].status.remaining, 9U);
  EXPECT_EQ(result.outcomes[0].status.reset, 17s);
}

TEST(ReadDecision, TakesDurationsBeyondNanosecondsAsNever) {
  // 2^63 - 1 microseconds would overflow as nanoseconds; a negative one means never already.
  pipeline::Charges charges;
  charges.count = 1;
  charges.live = 1;
  pipeline::ChargeResult result;
  ASSERT_TRUE(read_decision(reply_of("*6\r\n:0\r\n:0\r\n:9223372036854775807\r\n"
                                     ":9223372036854776\r\n:0\r\n:-1\r\n"),
                            charges, result));
  EXPECT_FALSE(result.live_admitted);
  EXPECT_EQ(result.outcomes[0].verdict.hold, limiter::Duration::max());
  EXPECT_EQ(result.outcomes[0].verdict.retry_after, limiter::Duration::max());
  EXPECT_EQ(result.outcomes[0].status.reset, limiter::Duration::max());
}

}  // namespace
}  // namespace sluice::store::redis
