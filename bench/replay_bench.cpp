// Lines per second through `sluice replay`'s Replayer: parse a JSON line, decide it through the
// pipeline, write its JSON output line. A 3-route, 2-limiter config; 1M distinct lines, 10k
// clients, some with API keys. Run in Release: build/release/bench/replay_bench
#include <benchmark/benchmark.h>

#include <string>
#include <vector>

#include "config/load_config.hpp"
#include "proxy/replay/replayer.hpp"

namespace sluice::replay {
namespace {

constexpr const char* kConfig = R"(
upstream: http://127.0.0.1:9000
limiters:
  per-ip: {algorithm: sliding_window, limit: 100, window: 1m}
  api-key: {algorithm: token_bucket, rate: 10/s, burst: 20, key: "header:X-Api-Key"}
routes:
  - {name: login, match: {path: /login, methods: [POST]}, limiters: [per-ip]}
  - {name: api, match: {path_prefix: /api/}, limiters: [per-ip, api-key]}
  - {name: static, match: {path_prefix: /}, limiters: [per-ip]}
)";

std::vector<std::string> synthetic_log(std::size_t lines) {
  std::vector<std::string> log;
  log.reserve(lines);
  const char* paths[] = {"/api/orders?page=2", "/api/users/42", "/index.html", "/login"};
  for (std::size_t i = 0; i < lines; ++i) {
    const std::size_t client = (i * 7919) % 10'000;
    std::string line =
        "{\"t\": " + std::to_string(1'700'000'000.0 + static_cast<double>(i) * 1e-4) +
        ", \"ip\": \"10.0." + std::to_string(client / 256) + "." + std::to_string(client % 256) +
        "\", \"method\": \"" + (i % 4 == 3 ? "POST" : "GET") + "\", \"path\": \"" + paths[i % 4] +
        "\"";
    if (i % 2 == 0) {
      line += ", \"headers\": {\"X-Api-Key\": \"key-" + std::to_string(client % 500) + "\"}";
    }
    log.push_back(line + "}");
  }
  return log;
}

void BM_ReplayLines(benchmark::State& state) {
  const config::ProxyConfig config =
      config::parse_config(kConfig, "bench.yaml", [](std::string_view) { return std::nullopt; });
  static const std::vector<std::string> log = synthetic_log(1'000'000);
  std::string out;
  out.reserve(1 << 22);
  std::size_t replayed = 0;
  for (auto _ : state) {
    Replayer replayer(config, InputFormat::jsonl);
    for (const std::string& line : log) {
      replayer.feed(line, out);
      if (out.size() > (1 << 21)) {
        benchmark::DoNotOptimize(out.data());
        out.clear();
      }
    }
    replayed += log.size();
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(replayed));
  state.counters["lines_per_second"] =
      benchmark::Counter(static_cast<double>(replayed), benchmark::Counter::kIsRate);
}
BENCHMARK(BM_ReplayLines)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace
}  // namespace sluice::replay

BENCHMARK_MAIN();
