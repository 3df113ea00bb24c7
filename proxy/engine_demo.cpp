#include "proxy/engine_demo.hpp"

#include <array>
#include <iomanip>
#include <string>

#include "limiter/key_hash.hpp"
#include "limiter/make_limiter.hpp"

namespace sluice::proxy {
namespace {

using namespace std::chrono_literals;
using limiter::AlgorithmKind;

struct Example {
  const char* rule;
  limiter::LimiterOptions options;
};

}  // namespace

void print_engine_demo(std::ostream& out) {
  const limiter::Rate five_per_second{.permits = 5, .period = 1s};
  const std::array<Example, 8> examples{{
      {"limit 5 per 1s", {.algorithm = AlgorithmKind::fixed_window, .limit = 5, .window = 1s}},
      {"limit 5 per 1s", {.algorithm = AlgorithmKind::sliding_window, .limit = 5, .window = 1s}},
      {"limit 5 per 1s", {.algorithm = AlgorithmKind::sliding_log, .limit = 5, .window = 1s}},
      {"limit 5 per 1s, 10 slots",
       {.algorithm = AlgorithmKind::wheel, .limit = 5, .window = 1s, .slots = 10}},
      {"rate 5/s, burst 3",
       {.algorithm = AlgorithmKind::token_bucket, .rate = five_per_second, .burst = 3}},
      {"rate 5/s, warmup 2s",
       {.algorithm = AlgorithmKind::token_bucket, .rate = five_per_second, .warmup = 2s}},
      {"rate 5/s, burst 2",
       {.algorithm = AlgorithmKind::leaky_bucket, .rate = five_per_second, .burst = 2}},
      {"limit 3 in flight", {.algorithm = AlgorithmKind::concurrency, .limit = 3}},
  }};
  constexpr int kRequests = 30;
  constexpr auto kSpacing = 50ms;
  out << "One client sends " << kRequests << " requests, one every 50 ms "
      << "(+ admitted, . refused):\n\n";
  const limiter::KeyHash client = limiter::hash_key("203.0.113.7");
  for (const Example& example : examples) {
    const auto limiter = limiter::make_limiter(example.options);
    std::string marks;
    limiter::TimePoint now = limiter::TimePoint(std::chrono::seconds(1'700'000'000));
    for (int i = 0; i < kRequests; ++i, now += kSpacing) {
      marks += limiter->decide(client, now, 1).verdict.admitted ? '+' : '.';
    }
    out << "  " << std::left << std::setw(16) << limiter::name_of(example.options.algorithm)
        << std::setw(28) << example.rule << marks << '\n';
  }
}

}  // namespace sluice::proxy
