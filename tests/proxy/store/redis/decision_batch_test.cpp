// A batch on its own: decide.lua's reply read into its waiters, and the waiters woken, without a
// Redis server (redis_store_test.cpp sends real batches).
#include "proxy/store/redis/decision_batch.hpp"

#include <gtest/gtest.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <string_view>

#include "proxy/store/redis/resp.hpp"
#include "tests/support/resp_reply.hpp"

namespace sluice::store::redis {
namespace {

using test::reply_of;

/// A request of one live limiter, waiting in a batch.
struct OneLimiter {
  config::LimiterConfig limiter;
  limiter::LimiterOptions options;
  pipeline::Decision decision;
  pipeline::Charges charges;
  pipeline::ChargeResult result;
  BatchWaiter waiter{
      .decision = decision, .charges = charges, .permit = 7, .now = {}, .result = result};

  OneLimiter() {
    limiter.name = "per-ip";
    decision.reports[0].limiter = &limiter;
    charges.count = 1;
    charges.live = 1;
    charges.options[0] = &options;
  }
};

class DecisionBatchTest : public ::testing::Test {
 protected:
  net::io_context io;
  DecisionBatch batch{io.get_executor()};
  OneLimiter first;
  OneLimiter second;

  /// Runs what is ready; the loop stops each time it runs out of work.
  void run_ready() {
    io.restart();
    io.poll();
  }

  void add_both() {
    batch.add({"p:"}, first.waiter);
    batch.add({"p:"}, second.waiter);
  }
};

TEST_F(DecisionBatchTest, ReadsEachWaitersDecisionIntoItsOwnResult) {
  add_both();
  batch.read(
      reply_of("*13\r\n:1700000000000000\r\n:1\r\n:1\r\n:0\r\n:0\r\n:4\r\n:1000\r\n"
               ":1\r\n:0\r\n:0\r\n:250\r\n:0\r\n:750\r\n"));
  EXPECT_TRUE(batch.failure().empty());
  ASSERT_TRUE(first.waiter.decided);
  EXPECT_EQ(first.waiter.decided_at, 1700000000000000);
  EXPECT_TRUE(first.waiter.result.live_admitted);
  EXPECT_EQ(first.waiter.result.outcomes[0].status.remaining, 4U);
  ASSERT_TRUE(second.waiter.decided);
  EXPECT_FALSE(second.waiter.result.live_admitted);
  EXPECT_EQ(second.waiter.result.outcomes[0].verdict.retry_after, std::chrono::microseconds(250));
}

TEST_F(DecisionBatchTest, AFailedRequestFailsAloneAndNamesWhy) {
  add_both();
  batch.read(
      reply_of("*14\r\n:1700000000000000\r\n:0\r\n:0\r\n:0\r\n:0\r\n:0\r\n:0\r\n"
               ":1\r\n:1\r\n:0\r\n:0\r\n:3\r\n:10\r\n$9\r\nWRONGTYPE\r\n"));
  EXPECT_FALSE(first.waiter.decided);
  EXPECT_TRUE(second.waiter.decided);
  EXPECT_EQ(batch.failure(), "WRONGTYPE");
}

TEST_F(DecisionBatchTest, AnErrorReplyOrAReplyOfTheWrongShapeDecidesNobody) {
  add_both();
  batch.read(reply_of("-ERR Function not found\r\n"));
  EXPECT_EQ(batch.failure(), "ERR Function not found");
  EXPECT_FALSE(first.waiter.decided);
  EXPECT_FALSE(second.waiter.decided);
  batch.read(reply_of("*7\r\n:1\r\n:1\r\n:1\r\n:0\r\n:0\r\n:4\r\n:1000\r\n"));  // one short
  EXPECT_EQ(batch.failure(), "unexpected reply");
  EXPECT_FALSE(second.waiter.decided);
}

TEST_F(DecisionBatchTest, ReadsASettlementBetweenTwoRequestsAndCountsItTaken) {
  batch.add({"p:"}, first.waiter);
  const Settlement settled{
      .limiter = &first.limiter, .options = &first.options, .shared_key = 1, .amount = 12};
  batch.add_settlement({"p:"}, {&settled, 1}, 7, 1700000000000000, {});
  batch.add({"p:"}, second.waiter);
  EXPECT_EQ(batch.size(), 3U);
  EXPECT_EQ(batch.settlements(), 1U);
  batch.read(
      reply_of("*19\r\n:1700000000000000\r\n:1\r\n:1\r\n:0\r\n:0\r\n:4\r\n:1000\r\n"
               ":1\r\n:1\r\n:0\r\n:0\r\n:0\r\n:1000\r\n"  // the settlement
               ":1\r\n:0\r\n:0\r\n:250\r\n:0\r\n:750\r\n"));
  EXPECT_TRUE(batch.failure().empty());
  EXPECT_EQ(batch.settled(), 1U);
  EXPECT_EQ(first.waiter.result.outcomes[0].status.remaining, 4U);
  ASSERT_TRUE(second.waiter.decided);
  EXPECT_FALSE(second.waiter.result.live_admitted);
  EXPECT_EQ(second.waiter.result.outcomes[0].verdict.retry_after, std::chrono::microseconds(250));

  // Failed: not taken, and the batch names why.
  batch.read(
      reply_of("*20\r\n:1700000000000000\r\n:1\r\n:1\r\n:0\r\n:0\r\n:4\r\n:1000\r\n"
               ":0\r\n:0\r\n:0\r\n:0\r\n:0\r\n:0\r\n"
               ":1\r\n:0\r\n:0\r\n:250\r\n:0\r\n:750\r\n$9\r\nWRONGTYPE\r\n"));
  EXPECT_EQ(batch.settled(), 0U);
  EXPECT_EQ(batch.failure(), "WRONGTYPE");
  batch.wake();
  EXPECT_EQ(batch.settlements(), 0U);
}

TEST_F(DecisionBatchTest, ReadsALeasesRenewalForItsSinkAndForgetsAnAnswerThatDidNotCome) {
  batch.add({"p:"}, first.waiter);
  const LeaseRenewal asked{.sink = nullptr, .key = 9, .amount = 5, .sent_at = {}, .permit = 3};
  batch.add_renewal(asked, "{p:}per-ip:00000000:0000000000000009", first.options, {});
  EXPECT_EQ(batch.size(), 2U);
  EXPECT_EQ(batch.settlements(), 0U);
  // The renewal's part: admitted, 95 left, 59 s to the window's end.
  batch.read(
      reply_of("*13\r\n:1700000000000000\r\n:1\r\n:1\r\n:0\r\n:0\r\n:4\r\n:1000\r\n"
               ":1\r\n:1\r\n:0\r\n:0\r\n:95\r\n:59000000\r\n"));
  EXPECT_TRUE(batch.failure().empty());
  ASSERT_EQ(batch.renewals().size(), 1U);
  const LeaseRenewal& renewal = batch.renewals()[0];
  EXPECT_EQ(renewal.key, 9U);
  EXPECT_TRUE(renewal.admitted);
  EXPECT_EQ(renewal.status.remaining, 95U);
  EXPECT_EQ(renewal.status.reset, std::chrono::seconds(59));
  EXPECT_EQ(renewal.decided_at, 1700000000000000);
  EXPECT_EQ(first.waiter.result.outcomes[0].status.remaining, 4U);
  // Refused near the limit; then an error reply: not admitted either way.
  batch.read(
      reply_of("*13\r\n:1700000000000000\r\n:1\r\n:1\r\n:0\r\n:0\r\n:4\r\n:1000\r\n"
               ":1\r\n:0\r\n:0\r\n:5000\r\n:2\r\n:5000\r\n"));
  EXPECT_FALSE(batch.renewals()[0].admitted);
  batch.read(
      reply_of("*13\r\n:1700000000000000\r\n:1\r\n:1\r\n:0\r\n:0\r\n:4\r\n:1000\r\n"
               ":1\r\n:1\r\n:0\r\n:0\r\n:95\r\n:59000000\r\n"));
  batch.read(reply_of("-ERR Function not found\r\n"));
  EXPECT_FALSE(batch.renewals()[0].admitted);
  batch.wake();
  EXPECT_TRUE(batch.renewals().empty());
}

TEST_F(DecisionBatchTest, WakesEveryWaiterAtOnceAndEmptiesForItsNextUse) {
  int woken = 0;
  const auto wait = [&](BatchWaiter& waiter) -> io::Awaitable<void> {
    batch.add({"p:"}, waiter);
    co_await batch.wait();
    ++woken;
  };
  net::co_spawn(io, wait(first.waiter), net::detached);
  net::co_spawn(io, wait(second.waiter), net::detached);
  run_ready();
  EXPECT_EQ(batch.size(), 2U);
  EXPECT_EQ(woken, 0);
  batch.wake();
  EXPECT_TRUE(batch.empty());
  run_ready();
  EXPECT_EQ(woken, 2);
  // Reused: the next waiter waits again until the next wake().
  net::co_spawn(io, wait(first.waiter), net::detached);
  run_ready();
  EXPECT_EQ(woken, 2);
  batch.wake();
  run_ready();
  EXPECT_EQ(woken, 3);
}

}  // namespace
}  // namespace sluice::store::redis
