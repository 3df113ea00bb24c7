#pragma once

// The Redis store beside the memory limiters, for tests that compare them on the same traffic:
// a fixture that sends each request through both, and helpers to send many at once.
#include <gtest/gtest.h>

#include <algorithm>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <deque>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "proxy/store/redis/redis_store.hpp"
#include "tests/support/event_loop.hpp"
#include "tests/support/manual_clock.hpp"
#include "tests/support/pipeline_fixture.hpp"
#include "tests/support/store_decision.hpp"

namespace sluice::test {

using Request = PipelineFixture::Request;

/// A store section (`url`, and more options) with a timeout of 1 s unless it sets one: Redis's
/// default 20 ms is a production budget, and here the Redis servers share two cores with the
/// tests beside them (and a build, in the test command), so a test that does not time Redis out
/// must not fail when a server answers late.
inline std::string patient_store(const std::string& store) {
  return store.find("timeout:") == std::string::npos ? store + ", timeout: 1s" : store;
}

/// The same configuration twice: one pipeline decides with its memory limiters, the other
/// through a Redis store on a one-connection loop.
class StoreFixture {
 public:
  /// `yaml` without a store section; `store` is added to it (url, and more options; see
  /// patient_store).
  StoreFixture(const std::string& yaml, const std::string& store)
      : memory_(yaml),
        shared_yaml_(yaml + "store: {type: redis, redis: {pool: 1, " + patient_store(store) +
                     "}}\n"),
        shared_(std::make_unique<PipelineFixture>(shared_yaml_)),
        store_(shared_->config().store.redis, 1) {
    loop_.run([this] { return store_.open(0); });
  }
  StoreFixture(const StoreFixture&) = delete;
  StoreFixture& operator=(const StoreFixture&) = delete;
  StoreFixture(StoreFixture&&) = delete;
  StoreFixture& operator=(StoreFixture&&) = delete;
  ~StoreFixture() { store_.close(0); }

  pipeline::Decision memory(const Request& request, limiter::TimePoint now,
                            std::optional<limiter::Permits> cost = std::nullopt) {
    return memory_.send(request, now, cost);
  }

  /// Through the Redis store, deciding at `now` (a simulated clock), or at Redis's own time.
  pipeline::Decision redis(const Request& request, std::optional<limiter::TimePoint> now,
                           std::optional<limiter::Permits> cost = std::nullopt) {
    return redis_with_clocks(request, now, now.value_or(limiter::SystemClock().now()), cost);
  }

  /// Through the Redis store, Redis deciding at `now` while the proxy's clock reads `local`.
  pipeline::Decision redis_with_clocks(const Request& request,
                                       std::optional<limiter::TimePoint> now,
                                       limiter::TimePoint local,
                                       std::optional<limiter::Permits> cost = std::nullopt) {
    pipeline::Decision decision;
    pipeline::Charges charges;
    if (shared_->pipeline().prepare(PipelineFixture::view_of(request), local, cost, decision,
                                    charges)) {
      store_.decide_at(now);
      loop_.run([&]() -> io::Awaitable<void> {
        co_await decide_through(store_, 0, shared_->pipeline(), decision, charges, local);
      });
    }
    return decision;
  }

  /// Settles the charges of a request that waited for its response (SPEC §9) in both, at `now`,
  /// and waits until Redis has taken or lost the settlements.
  void settle(const pipeline::Decision& memory, const pipeline::Decision& redis,
              const pipeline::ResponseSaid& said, limiter::TimePoint now) {
    pipeline::Pipeline::settle_locally(memory, said, now);
    settle_in_redis(redis, said, now);
  }
  /// With a Redis Cluster, a request whose keys live on several masters is settled on each:
  /// `settlements` is how many to wait for.
  void settle_in_redis(const pipeline::Decision& redis, const pipeline::ResponseSaid& said,
                       std::optional<limiter::TimePoint> now, std::uint64_t settlements = 1) {
    const std::uint64_t before = store_.settlements() + store_.lost_settlements();
    const bool available = store_.available();  // else settled at once, as on_error says
    store_.decide_at(now);
    store_.settle(0, redis, said, now.value_or(limiter::SystemClock().now()));
    bool sent = false;  // anything owed beyond, or short of, what was reserved
    for (std::size_t i = 0; i < redis.later_count; ++i) {
      sent =
          sent || pipeline::owed_for(*redis.route, redis.later[i], said) != redis.later[i].reserved;
    }
    const auto patience = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    while (sent && available &&
           store_.settlements() + store_.lost_settlements() < before + settlements &&
           std::chrono::steady_clock::now() < patience) {
      loop_.run_for(std::chrono::milliseconds(1));
    }
  }

  void release(const pipeline::Decision& memory, const pipeline::Decision& redis) {
    pipeline::Pipeline::release_locally(memory);
    store_.release(0, redis);
    loop_.poll();
  }

  store::redis::RedisStore& store() { return store_; }
  EventLoop& loop() { return loop_; }
  pipeline::Pipeline& shared_pipeline() { return shared_->pipeline(); }
  /// The Redis side's configuration loaded again, as a reload does: new limiter objects, the
  /// same definitions. The old one stays alive, for decisions that refer to it.
  void reload() {
    reloaded_.push_back(std::move(shared_));
    shared_ = std::make_unique<PipelineFixture>(shared_yaml_);
  }

 private:
  PipelineFixture memory_;
  std::string shared_yaml_;
  std::unique_ptr<PipelineFixture> shared_;
  std::vector<std::unique_ptr<PipelineFixture>> reloaded_;
  EventLoop loop_;
  store::redis::RedisStore store_;
};

/// Requests that hold concurrency permits, through both stores, given back oldest first.
class HeldPermits {
 public:
  void keep(const pipeline::Decision& memory, const pipeline::Decision& redis) {
    if (memory.permit_count != 0) {
      held_.emplace_back(memory, redis);
    }
  }
  /// Gives back the oldest request's permits, if one holds some.
  void release_oldest(StoreFixture& fixture) {
    if (!held_.empty()) {
      fixture.release(held_.front().first, held_.front().second);
      held_.pop_front();
    }
  }
  bool empty() const noexcept { return held_.empty(); }

 private:
  std::deque<std::pair<pipeline::Decision, pipeline::Decision>> held_;
};

/// One request through the store, counted in `done` when decided. A function, not a lambda: a
/// coroutine's parameters live in its frame, a lambda's captures only as long as the lambda.
inline io::Awaitable<void> decide_one(StoreFixture& fixture, Request request,
                                      std::optional<limiter::Permits> cost, limiter::TimePoint now,
                                      pipeline::Decision& decision, pipeline::Charges& charges,
                                      std::size_t& done) {
  if (fixture.shared_pipeline().prepare(PipelineFixture::view_of(request), now, cost, decision,
                                        charges)) {
    co_await decide_through(fixture.store(), 0, fixture.shared_pipeline(), decision, charges, now);
  }
  ++done;
}

/// A request and its cost (nullopt: the route's).
using Costed = std::pair<Request, std::optional<limiter::Permits>>;

/// `requests`, all in flight on the store's loop at once (so they go in one batch, or more if
/// there are more than kMaxBatch), decided at `now` (nullopt: Redis's clock), with `meanwhile`
/// (an awaitable) started among them: their decisions, in order of arrival, once all of them and
/// `meanwhile` are done.
inline std::vector<pipeline::Decision> together(
    StoreFixture& fixture, const std::vector<Costed>& requests,
    std::optional<limiter::TimePoint> now = std::nullopt, io::Awaitable<void> meanwhile = {}) {
  std::vector<pipeline::Decision> decisions(requests.size());
  std::vector<pipeline::Charges> charges(requests.size());
  std::size_t done = 0;
  std::size_t expected = requests.size();
  fixture.store().decide_at(now);
  auto& io = fixture.loop().io();
  for (std::size_t i = 0; i < requests.size(); ++i) {
    if (i == requests.size() / 2 && meanwhile.valid()) {
      ++expected;
      boost::asio::co_spawn(io, std::move(meanwhile),
                            [&done](const std::exception_ptr&) { ++done; });
    }
    boost::asio::co_spawn(
        io,
        decide_one(fixture, requests[i].first, requests[i].second,
                   now.value_or(limiter::SystemClock().now()), decisions[i], charges[i], done),
        boost::asio::detached);
  }
  while (done < expected) {
    fixture.loop().run_for(std::chrono::milliseconds(1));
  }
  return decisions;
}

/// `count` times `request`, as together() sends them.
inline std::vector<Costed> times(std::size_t count, const Request& request) {
  return std::vector<Costed>(count, Costed{request, std::nullopt});
}

inline std::size_t allowed_among(const std::vector<pipeline::Decision>& decisions) {
  return static_cast<std::size_t>(
      std::count_if(decisions.begin(), decisions.end(), [](const pipeline::Decision& decision) {
        return decision.outcome == pipeline::Outcome::allowed;
      }));
}

/// Redis works in whole microseconds: a duration as the store reports it.
inline limiter::Duration in_microseconds(limiter::Duration d) {
  if (d == limiter::Duration::max()) {
    return d;
  }
  return std::chrono::ceil<std::chrono::microseconds>(d);
}

/// `cached`: the store refused from its over-limit cache. The refusal must be the same; its
/// retry-after is the one Redis gave, which later admissions of smaller costs (or, live, other
/// replicas) may have pushed back: never later than the truth. Its headers may lag.
inline void expect_same(const pipeline::Decision& redis, const pipeline::Decision& memory,
                        const std::string& where, bool cached) {
  SCOPED_TRACE(where);
  EXPECT_EQ(name_of(redis.outcome), name_of(memory.outcome));
  EXPECT_EQ(redis.status, memory.status);
  EXPECT_EQ(redis.hold, in_microseconds(memory.hold));
  if (cached) {
    EXPECT_LE(redis.retry_after, in_microseconds(memory.retry_after));
    return;
  }
  EXPECT_EQ(redis.retry_after, in_microseconds(memory.retry_after));
  ASSERT_EQ(redis.applied().size(), memory.applied().size());
  for (std::size_t i = 0; i < redis.applied().size(); ++i) {
    const pipeline::LimiterReport& r = redis.applied()[i];
    const pipeline::LimiterReport& m = memory.applied()[i];
    SCOPED_TRACE(m.limiter->name);
    EXPECT_EQ(r.limiter->name, m.limiter->name);
    EXPECT_EQ(r.verdict.admitted, m.verdict.admitted);
    EXPECT_EQ(r.verdict.hold, in_microseconds(m.verdict.hold));
    EXPECT_EQ(r.verdict.retry_after, in_microseconds(m.verdict.retry_after));
    EXPECT_EQ(r.status.remaining, m.status.remaining);
    EXPECT_EQ(r.status.reset, in_microseconds(m.status.reset));
  }
  EXPECT_EQ(redis.permit_count, memory.permit_count);
}

struct Algorithm {
  std::string name;
  std::string limiter;  ///< The limiter's YAML mapping, without mode.
};

inline std::string config_for(const Algorithm& algorithm, std::string_view mode) {
  return "upstream: http://127.0.0.1:9000\nlimiters:\n  tested: {" + algorithm.limiter +
         ", mode: " + std::string(mode) + ", max_delay: 400ms}\nroutes:\n" +
         "  - {name: api, limiters: [tested]}\n";
}

}  // namespace sluice::test
