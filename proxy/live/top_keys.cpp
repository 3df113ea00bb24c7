#include "proxy/live/top_keys.hpp"

#include <algorithm>
#include <string>

#include "proxy/pipeline/request_key.hpp"

namespace sluice::live {

bool secret_key(const config::KeySpec& key) noexcept {
  return std::any_of(key.parts.begin(), key.parts.end(),
                     [](const config::KeyPart& part) { return part.secret(); });
}

void count_top_keys(const Generation& generation, std::size_t loop,
                    const pipeline::Decision& decision, const pipeline::RequestView& request,
                    limiter::TimePoint now) {
  if (!generation.heavy_hitters || decision.report_count == 0) {
    return;
  }
  telemetry::HeavyHitters::Recording recording = generation.heavy_hitters->recording(loop, now);
  const config::LimiterConfig* first = generation.config->limiters.data();
  for (const pipeline::LimiterReport& report : decision.applied()) {
    const config::LimiterConfig& limiter = *report.limiter;
    const auto describe = [&](telemetry::HeavyKeyText& about) {
      about.instance = static_cast<std::uint16_t>(pipeline::Pipeline::instance_of(report));
      about.secret = secret_key(limiter.key);
      if (about.secret) {
        return;  // shown as its hash: its text is never kept
      }
      thread_local std::string text;  // keeps its capacity: a new key allocates nothing
      if (pipeline::build_key(limiter.key, limiter.ipv6_prefix, request, decision.client,
                              decision.route->name, decision.auth.identity.get(), text)) {
        std::replace(text.begin(), text.end(), pipeline::kKeyPartSeparator, '+');
        about.assign(text);
      }
    };
    recording.count(static_cast<std::size_t>(&limiter - first), report.key,
                    !report.verdict.admitted, describe);
  }
}

}  // namespace sluice::live
