// Decisions per second through one Redis from one sluice event loop: the Redis store's
// decision script, `in_flight` requests at a time, 1000 clients, a token bucket that never
// limits (the forward path). bench/redis.sh runs it against a pinned redis-server, next to the
// ceiling redis-benchmark reaches with the same EVALSHA.
//
//   SLUICE_BENCH_REDIS_URL  the Redis to use (default: a redis-server started here)
//   SLUICE_BENCH_PRINT_CALL=1  print one decision's EVALSHA arguments and exit
#include <benchmark/benchmark.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_future.hpp>
#include <cstdlib>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "config/load_config.hpp"
#include "proxy/store/redis/redis_decision.hpp"
#include "proxy/store/redis/redis_scripts.hpp"
#include "proxy/store/redis/redis_store.hpp"
#include "tests/support/redis_server.hpp"
#include "tests/support/store_decision.hpp"

namespace sluice::store::redis {
namespace {

namespace net = boost::asio;

constexpr std::size_t kClients = 1000;
constexpr std::size_t kBatch = 20'000;  ///< Decisions per benchmark iteration.

std::string config_text(const std::string& url) {
  return "upstream: http://127.0.0.1:9000\n"
         "store: {type: redis, redis: {url: \"" +
         url +
         "\", pool: 1, timeout: 1s}}\n"
         "limiters:\n"
         "  per-ip: {algorithm: token_bucket, rate: 1000000/s, burst: 1000000}\n"
         "routes: [{name: all, limiters: [per-ip]}]\n";
}

/// Redis, the configuration, the pipeline and the store on one event loop.
class Setup {
 public:
  Setup() {
    std::string url;
    if (const char* given = std::getenv("SLUICE_BENCH_REDIS_URL")) {
      url = given;
    } else {
      server_ = std::make_unique<test::RedisServer>();
      url = server_->url();
    }
    config_ = std::make_unique<config::ProxyConfig>(config::parse_config(
        config_text(url), "bench.yaml", [](std::string_view) { return std::nullopt; }));
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

  /// One decision's EVALSHA, as redis-benchmark takes it (the key spread by __rand_int__).
  std::string call() {
    pipeline::Decision decision;
    pipeline::Charges charges;
    pipeline_->prepare(request(0), clock_.now(), std::nullopt, decision, charges);
    DecisionCall call;
    call.build(sha_of_decide(), config_->store.redis.prefix, decision, charges, 1);
    std::string text;
    for (std::string_view argument : call.arguments()) {
      std::string word(argument);
      if (word.starts_with("{")) {
        word = word.substr(0, word.rfind(':') + 1) + "__rand_int__";
      }
      text += (text.empty() ? "" : " ") + word;
    }
    return text;
  }

  std::string sha_of_decide() {
    std::string sha;
    auto loaded = net::co_spawn(
        io_,
        [&]() -> io::Awaitable<void> {
          auto connection = co_await RedisConnection::open(
              config_->store.redis.endpoint, config_->store.redis.url, std::chrono::seconds(1));
          const std::array<std::string_view, 3> load{"SCRIPT", "LOAD", decide_script()};
          sha = (co_await connection->command(load, std::chrono::seconds(1))).value.text;
          connection->close();
        },
        net::use_future);
    while (loaded.wait_for(std::chrono::seconds(0)) != std::future_status::ready) {
      io_.run_one();
    }
    loaded.get();
    return sha;
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

Setup& setup() {
  static Setup instance;
  return instance;
}

void BM_RedisDecisions(benchmark::State& state) {
  const auto in_flight = static_cast<std::size_t>(state.range(0));
  for (auto _ : state) {
    setup().decide(kBatch, in_flight);
  }
  state.SetItemsProcessed(state.iterations() * static_cast<std::int64_t>(kBatch));
}
BENCHMARK(BM_RedisDecisions)
    ->ArgName("in_flight")
    ->Arg(1)
    ->Arg(16)
    ->Arg(64)
    ->Arg(256)
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace sluice::store::redis

int main(int argc, char** argv) {
  if (std::getenv("SLUICE_BENCH_PRINT_CALL") != nullptr) {
    std::cout << sluice::store::redis::setup().call() << '\n';
    return 0;
  }
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
