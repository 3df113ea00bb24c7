// `proxy.yaml` through the config loader, as `sluice check`, `sluice run` and a reload read it.
// The loader's promise: whatever the bytes, either a configuration or a ConfigError listing the
// problems, never a crash and never another exception. A configuration it accepts must be one
// the proxy can run: every route answers itself or has an upstream, and the request pipeline
// (regexes, limiters, deny networks, bans) builds from it and decides requests.
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <optional>
#include <string>
#include <string_view>

#include "config/diagnostics.hpp"
#include "config/load_config.hpp"
#include "proxy/pipeline/ip_address.hpp"
#include "proxy/pipeline/pipeline.hpp"

namespace {

// Project symbols (one place to re-qualify them).
using sluice::config::ConfigError;
using sluice::config::parse_config;
using sluice::config::ProxyConfig;
using sluice::limiter::TimePoint;
using sluice::pipeline::Decision;
using sluice::pipeline::Header;
using sluice::pipeline::IpAddress;
using sluice::pipeline::Pipeline;
using sluice::pipeline::RequestView;

void require(bool condition, const char* what) {
  if (!condition) {
    std::fprintf(stderr, "config_fuzz: %s\n", what);
    std::abort();
  }
}

/// A fixed environment, so that ${VAR} expands the same on every run.
std::optional<std::string> environment(std::string_view name) {
  if (name == "UPSTREAM") {
    return "http://127.0.0.1:9000";
  }
  if (name == "REDIS_URL") {
    return "redis://app:s%40cret@127.0.0.1:6379/0";
  }
  if (name == "LIMIT") {
    return "10";
  }
  if (name == "EMPTY") {
    return "";
  }
  return std::nullopt;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  std::optional<ProxyConfig> config;
  try {
    config = parse_config(text, "proxy.yaml", environment);
  } catch (const ConfigError& error) {
    (void)error.lines();  // what `sluice check` prints
    return 0;
  }
  for (const auto& route : config->routes) {
    require(route.respond || route.upstream || config->upstream,
            "an accepted route with nowhere to send its requests");
  }
  std::optional<Pipeline> built;
  try {
    built.emplace(*config);
  } catch (const ConfigError& error) {
    // Key material (JWT providers' files and secrets) is judged where the pipeline is built, as
    // certificates are where TLS contexts are: `sluice check` builds both.
    (void)error.lines();
    return 0;
  } catch (const std::exception& error) {
    std::fprintf(stderr, "config_fuzz: %s\n", error.what());
    require(false, "an accepted config whose pipeline cannot be built");
  }
  Pipeline& pipeline = *built;
  const Header headers[] = {{"Host", "api.example.com"},
                            {"X-Api-Key", "k1"},
                            {"Authorization", "Bearer t1"},
                            {"Cookie", "session=s1"},
                            {"X-Forwarded-For", "192.0.2.1, 10.0.0.1"}};
  const RequestView request{.method = "GET",
                            .target = "/api/x?tenant=a",
                            .host = "api.example.com",
                            .headers = headers,
                            .peer = *IpAddress::parse("10.0.0.2")};
  // Today, and once more a moment later (a second charge on the same keys).
  const TimePoint now(std::chrono::seconds(1'704'067'200));  // 2024-01-01
  for (const TimePoint at : {now, now + std::chrono::milliseconds(1500)}) {
    const Decision decision = pipeline.decide(request, at);
    Pipeline::release_locally(decision);
  }
  return 0;
}
