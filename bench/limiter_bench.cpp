// ns per decision for each algorithm at 1, 10k and 1M keys on 1 and 2 threads, and bytes of
// memory per tracked key. Run in Release: build/release/bench/limiter_bench
//
// A decision here is what the proxy does per request and limiter: hash the key (for `key: ip`,
// the client's 4-byte IPv4 address), then evaluate and commit on the shared limiter. Each thread
// cycles through its own keys, so 2 threads measure scaling on distinct keys.
#include <benchmark/benchmark.h>
#include <malloc.h>

#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "limiter/decide.hpp"
#include "limiter/key_hash.hpp"
#include "limiter/make_limiter.hpp"

namespace sluice::limiter {
namespace {

using namespace std::chrono_literals;

const TimePoint kStart = TimePoint(std::chrono::seconds(1'700'000'000));

struct Subject {
  const char* name;
  LimiterOptions options;
};

/// Generous parameters: the forward path, where nearly every decision admits and commits.
const std::array<Subject, 7> kSubjects{{
    {"token_bucket",
     {.algorithm = AlgorithmKind::token_bucket,
      .rate = {.permits = 1000, .period = 1s},
      .burst = 1000}},
    {"leaky_bucket",
     {.algorithm = AlgorithmKind::leaky_bucket,
      .rate = {.permits = 1000, .period = 1s},
      .burst = 1000}},
    {"fixed_window", {.algorithm = AlgorithmKind::fixed_window, .limit = 60'000, .window = 1min}},
    {"sliding_window",
     {.algorithm = AlgorithmKind::sliding_window, .limit = 60'000, .window = 1min}},
    {"sliding_log", {.algorithm = AlgorithmKind::sliding_log, .limit = 60'000, .window = 1min}},
    {"wheel", {.algorithm = AlgorithmKind::wheel, .limit = 60'000, .window = 1min}},
    {"concurrency", {.algorithm = AlgorithmKind::concurrency, .limit = 1'000'000}},
}};

/// Client n's address, 10.0.0.0 + n, in network byte order as a socket gives it.
using Address = std::array<char, 4>;
Address ip_key(std::size_t n) {
  const auto address = static_cast<std::uint32_t>(0x0A000000U + n);
  return {static_cast<char>(address >> 24), static_cast<char>(address >> 16),
          static_cast<char>(address >> 8), static_cast<char>(address)};
}
KeyHash hash_address(const Address& address) {
  return hash_key(std::string_view(address.data(), address.size()));
}

/// Thread t owns keys t, t + threads, t + 2·threads, ...: distinct across threads.
std::vector<Address> keys_of_thread(std::size_t keys, int thread, int threads) {
  std::vector<Address> mine;
  const std::size_t count = std::max<std::size_t>(keys / static_cast<std::size_t>(threads), 1);
  mine.reserve(count);
  for (std::size_t j = 0; j < count; ++j) {
    mine.push_back(
        ip_key(static_cast<std::size_t>(thread) + j * static_cast<std::size_t>(threads)));
  }
  return mine;
}

std::unique_ptr<Limiter> g_limiter;  // shared by the benchmark's threads; built by thread 0

void BM_Decide(benchmark::State& state, const LimiterOptions& options) {
  const auto keys = static_cast<std::size_t>(state.range(0));
  const std::vector<Address> mine = keys_of_thread(keys, state.thread_index(), state.threads());
  if (state.thread_index() == 0) {
    g_limiter = make_limiter(options);
    for (std::size_t n = 0; n < keys; ++n) {  // every key known before timing starts
      g_limiter->decide(hash_address(ip_key(n)), kStart, 1);
    }
  }
  TimePoint now = kStart;
  std::size_t next = 0;
  for (auto _ : state) {  // threads start together, after thread 0's setup
    const Outcome outcome = g_limiter->decide(hash_address(mine[next]), now, 1);
    benchmark::DoNotOptimize(outcome);
    if (options.algorithm == AlgorithmKind::concurrency) {
      g_limiter->release(hash_address(mine[next]), 1);
    }
    if (++next == mine.size()) {
      next = 0;
    }
    now += 100ns;
  }
  state.SetItemsProcessed(state.iterations());
  if (state.thread_index() == 0) {
    state.counters["keys"] = static_cast<double>(g_limiter->stats().keys);
  }
}

/// Heap bytes in use, from glibc's allocator.
std::size_t heap_in_use() {
  const struct mallinfo2 info = mallinfo2();
  return info.uordblks + info.hblkhd;
}

void BM_MemoryPerKey(benchmark::State& state, const LimiterOptions& options) {
  constexpr std::size_t kKeys = 1'000'000;
  std::vector<KeyHash> hashes(kKeys);
  for (std::size_t n = 0; n < kKeys; ++n) {
    hashes[n] = hash_address(ip_key(n));
  }
  double heap_bytes_per_key = 0;
  double table_bytes_per_key = 0;
  for (auto _ : state) {
    const std::size_t before = heap_in_use();
    auto limiter = make_limiter(options);
    for (const KeyHash hash : hashes) {
      limiter->decide(hash, kStart, 1);
    }
    heap_bytes_per_key = static_cast<double>(heap_in_use() - before) / kKeys;
    const LimiterStats stats = limiter->stats();
    table_bytes_per_key = static_cast<double>(stats.memory_bytes) / static_cast<double>(stats.keys);
  }
  state.counters["heap_bytes_per_key"] = heap_bytes_per_key;
  state.counters["table_bytes_per_key"] = table_bytes_per_key;
}

void BM_DecideTwoLimiters(benchmark::State& state) {
  const auto per_ip = make_limiter(kSubjects[3].options);   // sliding_window
  const auto per_key = make_limiter(kSubjects[0].options);  // token_bucket
  const std::vector<Address> keys = keys_of_thread(10'000, 0, 1);
  TimePoint now = kStart;
  std::size_t next = 0;
  std::array<Outcome, 2> outcomes{};
  for (auto _ : state) {
    const KeyHash key = hash_address(keys[next]);
    const std::array<Charge, 2> charges{Charge{per_ip.get(), key, 1},
                                        Charge{per_key.get(), key, 1}};
    benchmark::DoNotOptimize(decide(charges, now, outcomes));
    next = next + 1 == keys.size() ? 0 : next + 1;
    now += 100ns;
  }
  state.SetItemsProcessed(state.iterations());
}

int register_benchmarks() {
  for (const Subject& subject : kSubjects) {
    const std::string name(subject.name);
    benchmark::RegisterBenchmark(("BM_Decide/" + name).c_str(), BM_Decide, subject.options)
        ->Arg(1)
        ->Arg(10'000)
        ->Arg(1'000'000)
        ->Threads(1)
        ->Threads(2)
        ->UseRealTime();
  }
  for (const Subject& subject : kSubjects) {
    benchmark::RegisterBenchmark(("BM_MemoryPerKey/" + std::string(subject.name)).c_str(),
                                 BM_MemoryPerKey, subject.options)
        ->Iterations(1)
        ->Unit(benchmark::kMillisecond);
  }
  benchmark::RegisterBenchmark("BM_DecideTwoLimiters", BM_DecideTwoLimiters);
  return 0;
}

const int kRegistered = register_benchmarks();

}  // namespace
}  // namespace sluice::limiter

BENCHMARK_MAIN();
