// Decisions per second through one Redis from one sluice event loop: the Redis store's
// decide.lua, `in_flight` requests at a time (batched as the store batches them), 1000 clients,
// a token bucket that never limits (the forward path); and a month's fixed window against a
// calendar month (whose bounds the proxy computes and sends). bench/redis.sh runs it against a
// pinned redis-server.
//
//   SLUICE_BENCH_REDIS_URL  the Redis to use (default: a redis-server started here)
#include <benchmark/benchmark.h>

#include <algorithm>
#include <array>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_future.hpp>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "config/load_config.hpp"
#include "proxy/store/redis/redis_store.hpp"
#include "tests/support/redis_server.hpp"
#include "tests/support/store_decision.hpp"

namespace sluice::store::redis {
namespace {

namespace net = boost::asio;

constexpr std::size_t kClients = 1000;
constexpr std::size_t kBatch = 20'000;  ///< Decisions per benchmark iteration.

/// The limiters measured: one that never limits, per client.
constexpr std::array<std::string_view, 3> kLimiters{
    "algorithm: token_bucket, rate: 1000000/s, burst: 1000000",
    "algorithm: fixed_window, limit: 4000000000, window: 744h",
    "algorithm: fixed_window, limit: 4000000000, calendar: month, timezone: Europe/Berlin"};

std::string config_text(const std::string& url, std::string_view limiter) {
  return "upstream: http://127.0.0.1:9000\n"
         "store: {type: redis, redis: {url: \"" +
         url +
         "\", pool: 1, timeout: 1s}}\n"
         "limiters:\n"
         "  per-ip: {" +
         std::string(limiter) +
         "}\n"
         "routes: [{name: all, limiters: [per-ip]}]\n";
}

/// Redis, the configuration, the pipeline and the store on one event loop.
class Setup {
 public:
  explicit Setup(std::string_view limiter) {
    std::string url;
    if (const char* given = std::getenv("SLUICE_BENCH_REDIS_URL")) {
      url = given;
    } else {
      server_ = std::make_unique<test::RedisServer>();
      url = server_->url();
    }
    config_ = std::make_unique<config::ProxyConfig>(config::parse_config(
        config_text(url, limiter), "bench.yaml", [](std::string_view) { return std::nullopt; }));
    pipeline_ = std::make_unique<pipeline::Pipeline>(*config_);
    store_ = std::make_unique<RedisStore>(config_->store.redis, 1);
    auto opened = net::co_spawn(io_, store_->open(0), net::use_future);
    while (opened.wait_for(std::chrono::seconds(0)) != std::future_status::ready) {
      io_.run_one();
    }
    opened.get();
    for (std::size_t i = 0; i < kClients; ++i) {
      addresses_.push_back(*pipeline::IpAddress::parse("10.1." + std::to_string(i / 256) + "." +
                                                       std::to_string(i % 256)));
    }
  }
  Setup(const Setup&) = delete;
  Setup& operator=(const Setup&) = delete;
  Setup(Setup&&) = delete;
  Setup& operator=(Setup&&) = delete;
  ~Setup() { store_->close(0); }

  pipeline::RequestView request(std::size_t n) const {
    return {.method = "GET",
            .target = "/",
            .host = "bench",
            .headers = {},
            .peer = addresses_[n % kClients]};
  }

  /// `count` decisions, `in_flight` at a time.
  void decide(std::size_t count, std::size_t in_flight) {
    std::size_t started = 0;
    std::size_t done = 0;
    const auto worker = [&]() -> io::Awaitable<void> {
      while (started < count) {
        const pipeline::RequestView view = request(started++);
        pipeline::Decision decision;
        pipeline::Charges charges;
        const limiter::TimePoint now = clock_.now();
        if (pipeline_->prepare(view, now, std::nullopt, decision, charges)) {
          co_await test::decide_through(*store_, 0, *pipeline_, decision, charges, now);
        }
        benchmark::DoNotOptimize(decision.outcome);
        ++done;
      }
    };
    for (std::size_t i = 0; i < in_flight; ++i) {
      net::co_spawn(io_, worker(), net::detached);
    }
    while (done < count) {
      io_.run_one();
    }
  }

  /// Redis's own count of decide calls (FCALL or EVALSHA) and the time it spent in them (µs).
  std::pair<double, double> redis_calls() {
    std::pair<double, double> calls{0, 0};
    auto read = net::co_spawn(
        io_,
        [&]() -> io::Awaitable<void> {
          const std::array<std::string_view, 2> info{"INFO", "commandstats"};
          auto connection = co_await RedisConnection::open(
              config_->store.redis.endpoint, config_->store.redis.url, std::chrono::seconds(1));
          const RedisReply reply = co_await connection->command(info, std::chrono::seconds(1));
          connection->close();
          for (const std::string_view command :
               {"cmdstat_fcall:calls=", "cmdstat_evalsha:calls="}) {
            const std::size_t at = reply.value.text.find(command);
            if (at != std::string::npos) {
              calls.first += std::stod(reply.value.text.substr(at + command.size()));
              const std::size_t usec = reply.value.text.find("usec=", at);
              calls.second += std::stod(reply.value.text.substr(usec + 5));
            }
          }
        },
        net::use_future);
    while (read.wait_for(std::chrono::seconds(0)) != std::future_status::ready) {
      io_.run_one();
    }
    read.get();
    return calls;
  }

 private:
  std::unique_ptr<test::RedisServer> server_;
  std::unique_ptr<config::ProxyConfig> config_;
  std::unique_ptr<pipeline::Pipeline> pipeline_;
  net::io_context io_;
  std::unique_ptr<RedisStore> store_;
  std::vector<pipeline::IpAddress> addresses_;
  limiter::SystemClock clock_;
};

/// One Setup per limiter, made when first used (each starts its own redis-server).
Setup& setup(std::size_t limiter = 0) {
  static std::array<std::unique_ptr<Setup>, kLimiters.size()> instances;
  if (!instances[limiter]) {
    instances[limiter] = std::make_unique<Setup>(kLimiters[limiter]);
  }
  return *instances[limiter];
}

void decide_and_count(benchmark::State& state, Setup& measured, std::size_t in_flight) {
  const auto [calls_before, usec_before] = measured.redis_calls();
  for (auto _ : state) {
    measured.decide(kBatch, in_flight);
  }
  const auto decisions = static_cast<double>(state.iterations()) * static_cast<double>(kBatch);
  state.SetItemsProcessed(static_cast<std::int64_t>(decisions));
  const auto [calls_after, usec_after] = measured.redis_calls();
  // How many requests each call carried, and Redis's time per decision, inside its commands.
  state.counters["per_call"] = decisions / std::max(1.0, calls_after - calls_before);
  state.counters["redis_us"] = (usec_after - usec_before) / decisions;
}

void BM_RedisDecisions(benchmark::State& state) {
  decide_and_count(state, setup(), static_cast<std::size_t>(state.range(0)));
}
BENCHMARK(BM_RedisDecisions)
    ->ArgName("in_flight")
    ->Arg(1)
    ->Arg(16)
    ->Arg(64)
    ->Arg(256)
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);

/// A 31-day (744 h) fixed window (1) against a calendar month in Berlin (2), 64 requests in flight.
void BM_RedisWindowDecisions(benchmark::State& state) {
  decide_and_count(state, setup(static_cast<std::size_t>(state.range(0))), 64);
}
BENCHMARK(BM_RedisWindowDecisions)
    ->ArgName("limiter")
    ->Arg(1)
    ->Arg(2)
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace sluice::store::redis

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
