// A decision through the Redis store allocates nothing once the loop has warmed up: requests wait
// in the frames of their coroutines, batches and their buffers are reused, replies are read in
// place. This binary counts operator new's calls (tests/support/counted_new.cpp), so it is kept
// apart from the other tests.
#include <gtest/gtest.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <vector>

#include "proxy/store/redis/redis_store.hpp"
#include "tests/support/counted_new.hpp"
#include "tests/support/pipeline_fixture.hpp"
#include "tests/support/redis_server.hpp"
#include "tests/support/store_decision.hpp"

namespace sluice::store::redis {
namespace {

namespace net = boost::asio;

/// `in_flight` workers on one loop, each deciding requests one after the other until `count`
/// are decided: two limiters per request, in Redis.
class Decisions {
 public:
  explicit Decisions(const std::string& url)
      : fixture_(
            "upstream: http://127.0.0.1:9000\n"
            "store: {type: redis, redis: {url: \"" +
            url +
            "\", pool: 1, timeout: 1s}}\n"
            "limiters:\n"
            "  per-ip: {algorithm: token_bucket, rate: 1000000/s, burst: 1000000}\n"
            "  per-route: {algorithm: fixed_window, limit: 1000000000, window: 1h, "
            "key: route}\n"
            "routes: [{name: all, limiters: [per-ip, per-route]}]\n"),
        store_(fixture_.config().store.redis, 1) {
    run_until([this] { return opened_; },
              [this]() -> io::Awaitable<void> {
                co_await store_.open(0);
                opened_ = true;
              });
  }
  Decisions(const Decisions&) = delete;
  Decisions& operator=(const Decisions&) = delete;
  ~Decisions() { store_.close(0); }

  void decide(std::size_t count, std::size_t in_flight) {
    std::size_t started = 0;
    std::size_t done = 0;
    for (std::size_t i = 0; i < in_flight; ++i) {
      net::co_spawn(io_, worker(count, started, done), net::detached);
    }
    while (done < count) {
      io_.run_one();
    }
  }

 private:
  io::Awaitable<void> worker(std::size_t count, std::size_t& started, std::size_t& done) {
    pipeline::Decision decision;
    pipeline::Charges charges;
    const test::PipelineFixture::Request request{.peer = "198.51.100.7"};
    while (started < count) {
      ++started;
      const limiter::TimePoint now = limiter::SystemClock().now();
      decision = {};
      charges = {};
      if (fixture_.pipeline().prepare(test::PipelineFixture::view_of(request), now, std::nullopt,
                                      decision, charges)) {
        co_await test::decide_through(store_, 0, fixture_.pipeline(), decision, charges, now);
      }
      EXPECT_EQ(decision.outcome, pipeline::Outcome::allowed);
      ++done;
    }
  }

  template <class Done, class Body>
  void run_until(Done finished, Body body) {
    net::co_spawn(io_, body(), net::detached);
    while (!finished()) {
      io_.run_one();
    }
  }

  test::PipelineFixture fixture_;
  net::io_context io_;
  RedisStore store_;
  bool opened_ = false;
};

TEST(Allocation, ADecisionThroughRedisAllocatesNothingOnceWarm) {
  const test::RedisServer server;
  Decisions decisions(server.url());
  for (const std::size_t in_flight : {std::size_t{1}, std::size_t{16}}) {
    decisions.decide(2000, in_flight);  // warms the loop up: batches, buffers, frames
    const std::size_t allocations =
        test::allocations_during([&] { decisions.decide(2000, in_flight); });
    EXPECT_EQ(allocations, 0U) << in_flight << " in flight: " << allocations
                               << " allocations for 2000 decisions";
  }
}

}  // namespace
}  // namespace sluice::store::redis
