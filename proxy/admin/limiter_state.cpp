#include "proxy/admin/limiter_state.hpp"

#include <string>

#include "proxy/pipeline/request_key.hpp"
#include "proxy/pipeline/wait_seconds.hpp"

namespace sluice::admin {

AdminResponse limiter_state(const AdminRequest& request, const live::Generation& generation,
                            const http::LoopContext& context) {
  // ?tier=VALUE: a tiered limiter's key as that tier counts it (SPEC §8).
  std::optional<std::string> tier;
  if (const std::optional<std::string_view> value = pipeline::query_value(request.query, "tier")) {
    tier = percent_decoded(*value);
  }
  const std::string_view rest = request.path.substr(std::string_view("/limiters/").size());
  const std::size_t slash = rest.find('/');
  if (slash == std::string_view::npos || slash == 0 || slash + 1 == rest.size()) {
    return problem(request, http::status::not_found);
  }
  const std::string name = percent_decoded(rest.substr(0, slash));
  const std::string key = percent_decoded(rest.substr(slash + 1));
  const limiter::TimePoint now = context.proxy.clock.now();
  pipeline::Pipeline& pipeline = generation.pipeline;
  const std::optional<limiter::Status> status = pipeline.peek(name, key, now, tier);
  if (!status) {
    return problem(request, http::status::not_found, "no limiter named " + name);
  }
  std::optional<limiter::Duration> banned;
  if (const std::optional<pipeline::IpAddress> client = pipeline::IpAddress::parse(key)) {
    banned = pipeline.banned_for(*client, now);
  }
  boost::json::object state{{"limiter", name},
                            {"remaining", status->remaining},
                            {"reset", pipeline::seconds_rounded_up(status->reset)},
                            {"banned", banned.has_value()}};
  if (banned) {
    state["banned_for"] = pipeline::retry_after_seconds(*banned);
  }
  if (tier) {
    state["tier"] = *tier;
  }
  return json_response(request, http::status::ok, state);
}

}  // namespace sluice::admin
