// ns per counted key in the heaviest-keys summaries (GET /top), as the proxy counts each
// request's limiters: one loop's lock, then a lookup by hash, and on a new key the eviction of
// the least-counted one and a copy of the key's text. Run in Release:
// build/release/bench/heavy_hitters_bench
//
// Keys: 1 (always found), 64 (all found in 64 places) and 1000 (a new key, so an eviction, on
// nearly every request: the costliest case), each described with a short IPv4 text.
#include <benchmark/benchmark.h>

#include <cstdint>
#include <string>
#include <vector>

#include "limiter/key_hash.hpp"
#include "proxy/telemetry/heavy_hitters.hpp"

namespace sluice::telemetry {
namespace {

const limiter::TimePoint kStart = limiter::TimePoint(std::chrono::seconds(1'700'000'000));

void BM_CountKey(benchmark::State& state) {
  const auto keys = static_cast<std::size_t>(state.range(0));
  HeavyHitters hitters(1, 1, 64);
  std::vector<limiter::KeyHash> hashes;
  std::vector<std::string> texts;
  for (std::size_t i = 0; i < keys; ++i) {
    texts.push_back("10.0." + std::to_string(i / 256) + "." + std::to_string(i % 256));
    hashes.push_back(limiter::hash_key(texts.back()));
  }
  std::size_t next = 0;
  for (auto _ : state) {
    const std::size_t i = next;
    next = next + 1 == keys ? 0 : next + 1;
    hitters.recording(0, kStart).count(0, hashes[i], false,
                                       [&](HeavyKeyText& about) { about.assign(texts[i]); });
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_CountKey)->Arg(1)->Arg(64)->Arg(1000);

}  // namespace
}  // namespace sluice::telemetry

BENCHMARK_MAIN();
