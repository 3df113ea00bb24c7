// The decision script's reply read on its own, without a Redis server (redis_store_test.cpp runs
// the scripts themselves).
#include "proxy/store/redis/redis_decision.hpp"

#include <gtest/gtest.h>

#include <array>
#include <chrono>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "proxy/store/redis/resp.hpp"
#include "tests/support/resp_reply.hpp"

namespace sluice::store::redis {
namespace {

using namespace std::chrono_literals;

using test::reply_of;

pipeline::Charges charges_of(std::size_t count, std::size_t live) {
  pipeline::Charges charges;
  charges.count = count;
  charges.live = live;
  return charges;
}

TEST(ReadDecision, ReadsEachChargesOutcomeInMicroseconds) {
  const pipeline::Charges charges = charges_of(1, 1);
  pipeline::ChargeResult result;
  std::size_t at = 0;
  ASSERT_EQ(read_decision(reply_of("*6\r\n:1\r\n:1\r\n:1500\r\n:0\r\n:9\r\n:17000000\r\n"), at,
                          charges, result),
            DecisionReply::decided);
  EXPECT_EQ(at, 6U);
  EXPECT_TRUE(result.live_admitted);
  EXPECT_TRUE(result.outcomes[0].verdict.admitted);
  EXPECT_EQ(result.outcomes[0].verdict.hold, 1500us);
  EXPECT_EQ(result.outcomes[0].status.remaining, 9U);
  EXPECT_EQ(result.outcomes[0].status.reset, 17s);
}

TEST(ReadDecision, TakesDurationsBeyondNanosecondsAsNever) {
  // 2^63 - 1 microseconds would overflow as nanoseconds; a negative one means never already.
  const pipeline::Charges charges = charges_of(1, 1);
  pipeline::ChargeResult result;
  std::size_t at = 0;
  ASSERT_EQ(read_decision(reply_of("*6\r\n:1\r\n:0\r\n:9223372036854775807\r\n"
                                   ":9223372036854776\r\n:0\r\n:-1\r\n"),
                          at, charges, result),
            DecisionReply::decided);
  EXPECT_FALSE(result.live_admitted);
  EXPECT_EQ(result.outcomes[0].verdict.hold, limiter::Duration::max());
  EXPECT_EQ(result.outcomes[0].verdict.retry_after, limiter::Duration::max());
  EXPECT_EQ(result.outcomes[0].status.reset, limiter::Duration::max());
}

TEST(ReadDecision, ReadsABatchRequestByRequestAndNamesTheFirstFailure) {
  // Three requests: two limiters (one shadow), one that failed, one limiter; then the failure.
  const RespValue reply = reply_of(
      "*20\r\n"
      ":1\r\n:1\r\n:0\r\n:0\r\n:4\r\n:1000\r\n:0\r\n:0\r\n:0\r\n:0\r\n:0\r\n"
      ":0\r\n:0\r\n:0\r\n:0\r\n:0\r\n:0\r\n"
      ":1\r\n:0\r\n:0\r\n:250\r\n:0\r\n:750\r\n"
      "$44\r\nWRONGTYPE Operation against a key holding th\r\n");
  // (20 elements would not hold them all: the reader must see the reply is short.)
  std::size_t at = 0;
  pipeline::ChargeResult first;
  ASSERT_EQ(read_decision(reply, at, charges_of(2, 1), first), DecisionReply::decided);
  EXPECT_TRUE(first.live_admitted);
  EXPECT_FALSE(first.shadow_admitted);
  EXPECT_EQ(first.outcomes[0].status.remaining, 4U);
  pipeline::ChargeResult second;
  EXPECT_EQ(read_decision(reply, at, charges_of(1, 1), second), DecisionReply::failed);
  EXPECT_EQ(at, 17U);
  pipeline::ChargeResult third;
  EXPECT_EQ(read_decision(reply, at, charges_of(1, 1), third), DecisionReply::malformed);
  EXPECT_EQ(at, 17U);

  const RespValue whole = reply_of(
      "*24\r\n"
      ":1\r\n:1\r\n:0\r\n:0\r\n:4\r\n:1000\r\n:0\r\n:0\r\n:0\r\n:0\r\n:0\r\n"
      ":0\r\n:0\r\n:0\r\n:0\r\n:0\r\n:0\r\n"
      ":1\r\n:0\r\n:0\r\n:250\r\n:0\r\n:750\r\n"
      "$9\r\nWRONGTYPE\r\n");
  at = 11;
  ASSERT_EQ(read_decision(whole, at, charges_of(1, 1), second), DecisionReply::failed);
  ASSERT_EQ(read_decision(whole, at, charges_of(1, 1), third), DecisionReply::decided);
  EXPECT_FALSE(third.live_admitted);
  EXPECT_EQ(third.outcomes[0].verdict.retry_after, 250us);
  EXPECT_EQ(failure_of(whole, at), "WRONGTYPE");
  EXPECT_EQ(failure_of(whole, at - 1), "");  // not a string there
}

TEST(ReadDecision, RefusesAPartThatIsNotDecideLuas) {
  pipeline::ChargeResult result;
  for (const std::string_view bytes :
       {"*6\r\n:2\r\n:1\r\n:0\r\n:0\r\n:9\r\n:17\r\n",   // a status neither 0 nor 1
        "*6\r\n:1\r\n+OK\r\n:0\r\n:0\r\n:9\r\n:17\r\n",  // not all integers
        "*5\r\n:1\r\n:1\r\n:0\r\n:0\r\n:9\r\n",          // one short
        "-ERR boom\r\n", ":1\r\n"}) {
    std::size_t at = 0;
    EXPECT_EQ(read_decision(reply_of(bytes), at, charges_of(1, 1), result),
              DecisionReply::malformed)
        << bytes;
    EXPECT_EQ(at, 0U);
  }
}

/// A request on one live fixed window, as the store hands it to a BatchCall.
struct FixedWindowRequest {
  FixedWindowRequest(std::string name, limiter::Permits limit, limiter::Permits cost) {
    config.name = std::move(name);
    options.algorithm = limiter::AlgorithmKind::fixed_window;
    options.limit = limit;
    decision.reports[0].limiter = &config;
    charges.count = 1;
    charges.live = 1;
    charges.options[0] = &options;
    charges.items[0].cost = cost;
    charges.shared_key[0] = 0xab;
  }
  FixedWindowRequest(const FixedWindowRequest&) = delete;
  FixedWindowRequest& operator=(const FixedWindowRequest&) = delete;

  config::LimiterConfig config;
  limiter::LimiterOptions options;
  pipeline::Decision decision;
  pipeline::Charges charges;
};

TEST(BatchCall, PutsEveryRequestsKeysFirstThenEachDefinitionOnceThenTheRequests) {
  // Two requests on one limiter, then the same call emptied and reused for one.
  FixedWindowRequest request("per-ip", 10, 2);
  request.options.window = 1s;
  const pipeline::Decision& decision = request.decision;
  pipeline::Charges& charges = request.charges;

  BatchCall call;
  call.add({"p:"}, decision, charges, 0x10, {});
  charges.shared_key[0] = 0xcd;
  call.add({"p:"}, decision, charges, 0x20, {});
  EXPECT_EQ(call.requests(), 2U);
  const auto arguments = call.arguments(
      "FCALL", "decide", std::chrono::system_clock::time_point(std::chrono::microseconds(42)));
  const std::vector<std::string_view> expected_tail{
      "42", "2", "1",  // now (µs), requests, definitions
      "1",  "0", "1e+06", "10", "1e+06",
      "0",  "0",                      // fixed_window, reject, max_delay, limit, window (µs)
      "1",  "1", "10",    "1",  "2",  // limiters, live, permit, definition, cost
      "1",  "1", "20",    "1",  "2"};
  ASSERT_EQ(arguments.size(), 5U + expected_tail.size());
  EXPECT_EQ(arguments[0], "FCALL");
  EXPECT_EQ(arguments[1], "decide");
  EXPECT_EQ(arguments[2], "2");  // numkeys
  EXPECT_TRUE(arguments[3].starts_with("{p:}per-ip:")) << arguments[3];
  EXPECT_TRUE(arguments[3].ends_with(":00000000000000ab")) << arguments[3];
  EXPECT_TRUE(arguments[4].ends_with(":00000000000000cd")) << arguments[4];
  EXPECT_EQ(std::vector<std::string_view>(arguments.begin() + 5, arguments.end()), expected_tail);

  call.clear();
  call.add({"p:"}, decision, charges, 0x30, {});
  const auto again = call.arguments("EVALSHA", "sha", std::nullopt);
  ASSERT_EQ(again.size(), 2U + 1 + 1 + 3 + 7 + 5);
  EXPECT_EQ(again[2], "1");
  EXPECT_EQ(again[4], "0");  // Redis's own clock
  EXPECT_EQ(again[5], "1");
  EXPECT_EQ(again[6], "1");
  EXPECT_EQ(again[16], "30");
}

TEST(BatchCall, SendsACalendarWindowsBoundsAndThePeriodBeforesLengthKeepingItsKeyName) {
  // A month in UTC, decided on 2026-02-15: February's bounds, January's 31 days.
  FixedWindowRequest request("monthly", 10000, 1);
  limiter::LimiterOptions& options = request.options;
  options.calendar = limiter::Calendar::month;
  const pipeline::Decision& decision = request.decision;
  const pipeline::Charges& charges = request.charges;
  BatchCall call;
  const limiter::TimePoint february{
      std::chrono::sys_days{std::chrono::year(2026) / std::chrono::February / 15}};
  call.add({"p:"}, decision, charges, 1, february);
  const auto arguments = call.arguments("FCALL", "decide");
  const std::vector<std::string_view> definition(arguments.begin() + 7, arguments.begin() + 14);
  EXPECT_EQ(definition, (std::vector<std::string_view>{"1", "0", "1e+06", "10000", "-2.6784e+12",
                                                       "1.769904e+15", "1.7723232e+15"}));

  // The key's name hashes the unit and the zone, never the bounds: the same all year.
  std::string key;
  append_redis_key(key, {"p:"}, "monthly", options, 0xab);
  EXPECT_EQ(std::string(arguments[3]), key);
  options.calendar = limiter::Calendar::week;
  std::string weekly;
  append_redis_key(weekly, {"p:"}, "monthly", options, 0xab);
  EXPECT_NE(weekly, key);
}

TEST(BatchCall, SendsAChargeThatReservesNothingAsItsCostNegated) {
  // count_if, or cost: response without an estimate: admitted if 1 fits, nothing committed.
  FixedWindowRequest request("tokens", 100, 1);
  request.charges.items[0].settled_later = true;
  request.charges.items[0].reserve = 0;
  BatchCall call;
  call.add({"p:"}, request.decision, request.charges, 0x10, {});
  EXPECT_EQ(call.arguments("FCALL", "decide").back(), "-1");

  // With an estimate of 40: 40 reserved, sent as the cost it is.
  request.charges.items[0].cost = 40;
  request.charges.items[0].reserve = 40;
  call.clear();
  call.add({"p:"}, request.decision, request.charges, 0x10, {});
  EXPECT_EQ(call.arguments("FCALL", "decide").back(), "40");
}

TEST(BatchCall, SendsASettlementAfterARequestWithDefinitionsOfItsOwn) {
  FixedWindowRequest request("tokens", 100, 2);
  request.options.window = 1s;
  BatchCall call;
  call.add({"p:"}, request.decision, request.charges, 0x10, {});
  const std::array<Settlement, 2> settled{Settlement{.limiter = &request.config,
                                                     .options = &request.options,
                                                     .shared_key = 0xcd,
                                                     .amount = 150},
                                          Settlement{.limiter = &request.config,
                                                     .options = &request.options,
                                                     .shared_key = 0xef,
                                                     .amount = -30}};
  call.add_settlement({"p:"}, settled, 0x20, 1'700'000'000'000'000, {});
  EXPECT_EQ(call.requests(), 2U);
  const auto arguments = call.arguments("FCALL", "decide");
  const std::vector<std::string_view> definition{"1", "0", "1e+06", "100", "1e+06", "0", "0"};
  std::vector<std::string_view> expected_tail{"0", "2", "3"};  // now, requests, definitions
  for (int i = 0; i < 3; ++i) {  // the request's, then one per settled charge
    expected_tail.insert(expected_tail.end(), definition.begin(), definition.end());
  }
  for (const std::string_view value : {"1", "1", "10", "1", "2",             // the request
                                       "2", "-1", "20", "1700000000000000",  // the settlement
                                       "2", "150", "3", "-30"}) {
    expected_tail.push_back(value);
  }
  ASSERT_EQ(arguments.size(), 6U + expected_tail.size());
  EXPECT_EQ(arguments[2], "3");  // numkeys
  EXPECT_TRUE(arguments[4].ends_with(":00000000000000cd")) << arguments[4];
  EXPECT_TRUE(arguments[5].ends_with(":00000000000000ef")) << arguments[5];
  EXPECT_EQ(std::vector<std::string_view>(arguments.begin() + 6, arguments.end()), expected_tail);

  // A request after the settlement shares the first definition, never a settlement's.
  call.add({"p:"}, request.decision, request.charges, 0x30, {});
  EXPECT_EQ(call.arguments("FCALL", "decide")[8], "3");  // definitions: still three
}

TEST(ReadSettlement, SkipsItsStatusesAndTellsWhetherRedisTookIt) {
  std::size_t at = 0;
  EXPECT_EQ(read_settlement(reply_of("*6\r\n:1\r\n:1\r\n:0\r\n:0\r\n:0\r\n:5\r\n"), at, 1),
            DecisionReply::decided);
  EXPECT_EQ(at, 6U);
  at = 0;
  EXPECT_EQ(read_settlement(reply_of("*6\r\n:0\r\n:0\r\n:0\r\n:0\r\n:0\r\n:0\r\n"), at, 1),
            DecisionReply::failed);
  EXPECT_EQ(at, 6U);
  at = 0;
  EXPECT_EQ(read_settlement(reply_of("*6\r\n:1\r\n:1\r\n:0\r\n:0\r\n:0\r\n:5\r\n"), at, 2),
            DecisionReply::malformed);  // one charge's values, not two
  EXPECT_EQ(at, 0U);
}

}  // namespace
}  // namespace sluice::store::redis
