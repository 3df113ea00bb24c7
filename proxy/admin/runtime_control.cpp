#include "proxy/admin/runtime_control.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>
#include <charconv>
#include <string>
#include <variant>

#include "config/units.hpp"
#include "limiter/key_hash.hpp"
#include "proxy/admin/shared_control.hpp"
#include "proxy/pipeline/request_key.hpp"
#include "proxy/pipeline/wait_seconds.hpp"

namespace sluice::admin {
namespace {

namespace json = boost::json;
using telemetry::AdminAction;

/// The longest an override or a ban set at runtime may last: past that, it belongs in proxy.yaml.
constexpr limiter::Duration kLongestFor = std::chrono::hours(24 * 365);

/// NAME and KEY (or IP alone) of a path after its `prefix`; nullopt when a part is missing.
struct Target {
  std::string name;
  std::string key;
};
std::optional<Target> target_of(std::string_view path, std::string_view prefix, bool with_key) {
  const std::string_view rest = path.substr(prefix.size());
  if (!with_key) {
    return rest.empty() || rest.find('/') != std::string_view::npos
               ? std::nullopt
               : std::optional(Target{percent_decoded(rest), {}});
  }
  const std::size_t slash = rest.find('/');
  if (slash == std::string_view::npos || slash == 0 || slash + 1 == rest.size()) {
    return std::nullopt;
  }
  return Target{percent_decoded(rest.substr(0, slash)), percent_decoded(rest.substr(slash + 1))};
}

/// A key as the pipeline forms it (parts joined with the separator, not `+`).
std::string internal_key(std::string key) {
  std::replace(key.begin(), key.end(), '+', pipeline::kKeyPartSeparator);
  return key;
}

/// A key as logs and reads show it: secret-bearing keys (SPEC §2) as their hash.
std::string key_shown(const config::LimiterConfig* limiter, const std::string& key) {
  const bool secret =
      limiter != nullptr && std::any_of(limiter->key.parts.begin(), limiter->key.parts.end(),
                                        [](const config::KeyPart& part) { return part.secret(); });
  if (!secret) {
    return key;
  }
  return hashed_key_text(limiter::hash_key(internal_key(key)));
}

/// The request's body as a JSON object, or why not (for a 400).
std::optional<json::object> body_object(const AdminRequest& request, std::string& problem_text) {
  boost::system::error_code error;
  json::value value = json::parse(request.message.body(), error);
  if (error || !value.is_object()) {
    problem_text = "the body is not a JSON object";
    return std::nullopt;
  }
  return std::move(value.as_object());
}

/// `for` of `body`, taken out of it: a duration as proxy.yaml writes them ("10m").
std::optional<limiter::Duration> take_for(json::object& body, std::string& problem_text) {
  const json::value* given = body.if_contains("for");
  if (given == nullptr) {
    problem_text = "for: missing (how long it lasts, like \"1h\")";
    return std::nullopt;
  }
  std::optional<limiter::Duration> duration;
  if (given->is_string()) {
    duration = config::parse_duration(std::string_view(given->as_string()));
  }
  body.erase("for");
  if (!duration || *duration <= limiter::Duration::zero() || *duration > kLongestFor) {
    problem_text = "for: expected a duration from 1ms to 365d, like \"10m\" or \"1h\"";
    return std::nullopt;
  }
  return duration;
}

/// 503: the shared store did not take the write (nothing changed, here or elsewhere).
AdminResponse store_failed(const AdminRequest& request, const store::StoreError& error) {
  return problem(request, http::status::service_unavailable,
                 std::string("the shared store did not answer: ") + error.what());
}

/// A write's limiter and key, with the generation that names the limiter.
struct NamedKey {
  Target target;
  std::shared_ptr<const live::Generation> generation;
  const config::LimiterConfig* limiter = nullptr;
};
/// The limiter and key the path names (after `prefix`), or the 404 that says why not.
std::variant<NamedKey, AdminResponse> named_key(const AdminRequest& request,
                                                http::LoopContext& context,
                                                std::string_view prefix) {
  std::optional<Target> target = target_of(request.path, prefix, true);
  if (!target) {
    return problem(request, http::status::not_found);
  }
  std::shared_ptr<const live::Generation> generation = context.generations.get();
  const config::LimiterConfig* limiter = generation->config->limiter_named(target->name);
  if (limiter == nullptr) {
    return problem(request, http::status::not_found, "no limiter named " + target->name);
  }
  return NamedKey{std::move(*target), std::move(generation), limiter};
}

io::Awaitable<AdminResponse> reset(const AdminRequest& request, http::LoopContext& context) {
  const std::optional<Target> target = target_of(request.path, "/limiters/", true);
  if (!target) {
    co_return problem(request, http::status::not_found);
  }
  const std::shared_ptr<const live::Generation> generation = context.generations.get();
  const auto definitions =
      generation->pipeline.forget(target->name, target->key, context.proxy.clock.now());
  if (!definitions) {
    co_return problem(request, http::status::not_found, "no limiter named " + target->name);
  }
  const limiter::KeyHash shared_key =
      limiter::hash_key(internal_key(target->key), pipeline::kSharedKeySeed);
  try {
    co_await context.proxy.store->forget(context.index, target->name, *definitions, shared_key);
  } catch (const store::StoreError& error) {
    co_return store_failed(request, error);
  }
  spdlog::info("admin: reset limiter {} key {} (from {})", target->name,
               key_shown(generation->config->limiter_named(target->name), target->key),
               request.peer);
  co_return json_response(request, http::status::ok,
                          {{"limiter", target->name}, {"key", target->key}, {"reset", true}});
}

io::Awaitable<AdminResponse> set_override(const AdminRequest& request, http::LoopContext& context) {
  std::variant<NamedKey, AdminResponse> named = named_key(request, context, "/limiters/");
  if (AdminResponse* refused = std::get_if<AdminResponse>(&named)) {
    co_return std::move(*refused);
  }
  const NamedKey& found = std::get<NamedKey>(named);
  std::string problem_text;
  std::optional<json::object> body = body_object(request, problem_text);
  const std::optional<limiter::Duration> lasting =
      body ? take_for(*body, problem_text) : std::nullopt;
  if (!lasting) {
    co_return problem(request, http::status::bad_request, problem_text);
  }
  const limiter::TimePoint now = context.proxy.clock.now();
  pipeline::OverrideEntry entry{.limiter = found.target.name,
                                .key = found.target.key,
                                .parameters = json::serialize(*body),
                                .expires_at = now + *lasting};
  std::vector<std::string> problems;
  if (!pipeline::RuntimeControl::options_for(entry, *found.limiter, problems)) {
    std::string detail;
    for (const std::string& each : problems) {
      detail += (detail.empty() ? "" : "; ") + each;
    }
    co_return problem(request, http::status::bad_request, detail);
  }
  try {
    if (context.proxy.store->shares_control()) {
      // Named: no temporary lives across a co_await (GCC's coroutines mishandle some).
      const std::string field = override_field(entry);
      const std::string value = override_value(entry);
      co_await context.proxy.store->write_control(context.index, "overrides", field, value);
    }
  } catch (const store::StoreError& error) {
    co_return store_failed(request, error);
  }
  context.proxy.control->set_override(entry, *found.generation->config, now);
  spdlog::info("admin: override limiter {} key {} with {} for {}s (from {})", found.target.name,
               key_shown(found.limiter, found.target.key), entry.parameters,
               pipeline::seconds_rounded_up(*lasting), request.peer);
  co_return json_response(request, http::status::ok,
                          {{"limiter", found.target.name},
                           {"key", found.target.key},
                           {"parameters", *body},
                           {"expires_in", pipeline::seconds_rounded_up(*lasting)}});
}

io::Awaitable<AdminResponse> end_override(const AdminRequest& request, http::LoopContext& context) {
  std::variant<NamedKey, AdminResponse> named = named_key(request, context, "/overrides/");
  if (AdminResponse* refused = std::get_if<AdminResponse>(&named)) {
    co_return std::move(*refused);
  }
  const NamedKey& found = std::get<NamedKey>(named);
  bool existed = false;
  try {
    if (context.proxy.store->shares_control()) {
      const std::string field =
          override_field({.limiter = found.target.name, .key = found.target.key, .parameters = {}});
      existed = co_await context.proxy.store->write_control(context.index, "overrides", field,
                                                            std::nullopt);
    }
  } catch (const store::StoreError& error) {
    co_return store_failed(request, error);
  }
  existed = context.proxy.control->remove_override(found.target.name, found.target.key,
                                                   *found.generation->config,
                                                   context.proxy.clock.now()) ||
            existed;
  if (!existed) {
    co_return problem(request, http::status::not_found,
                      "no override of limiter " + found.target.name + " for that key");
  }
  spdlog::info("admin: end override of limiter {} key {} (from {})", found.target.name,
               key_shown(found.limiter, found.target.key), request.peer);
  co_return json_response(
      request, http::status::ok,
      {{"limiter", found.target.name}, {"key", found.target.key}, {"overridden", false}});
}

/// The client address a `/bans/IP` path names, or the 404 or 400 that says why not.
std::variant<pipeline::IpAddress, AdminResponse> ip_of(const AdminRequest& request) {
  const std::optional<Target> target = target_of(request.path, "/bans/", false);
  if (!target) {
    return problem(request, http::status::not_found);
  }
  const std::optional<pipeline::IpAddress> ip = pipeline::IpAddress::parse(target->name);
  if (!ip) {
    return problem(request, http::status::bad_request,
                   "\"" + target->name + "\" is not an IP address");
  }
  return *ip;
}

io::Awaitable<AdminResponse> ban(const AdminRequest& request, http::LoopContext& context) {
  std::variant<pipeline::IpAddress, AdminResponse> named = ip_of(request);
  if (AdminResponse* refused = std::get_if<AdminResponse>(&named)) {
    co_return std::move(*refused);
  }
  const pipeline::IpAddress* ip = &std::get<pipeline::IpAddress>(named);
  std::string problem_text;
  std::optional<json::object> body = body_object(request, problem_text);
  const std::optional<limiter::Duration> lasting =
      body ? take_for(*body, problem_text) : std::nullopt;
  if (!lasting) {
    co_return problem(request, http::status::bad_request, problem_text);
  }
  if (!body->empty()) {
    co_return problem(request, http::status::bad_request,
                      std::string(body->begin()->key()) + ": a ban takes only \"for\"");
  }
  const std::shared_ptr<const live::Generation> generation = context.generations.get();
  const limiter::TimePoint now = context.proxy.clock.now();
  const pipeline::BanEntry entry{.ip = *ip, .expires_at = now + *lasting};
  try {
    if (context.proxy.store->shares_control()) {
      const std::string field = ip->to_string();
      const std::string value = ban_value(entry);
      co_await context.proxy.store->write_control(context.index, "bans", field, value);
    }
  } catch (const store::StoreError& error) {
    co_return store_failed(request, error);
  }
  context.proxy.control->set_ban(entry, *generation->config, now);
  spdlog::info("admin: ban {} for {}s (from {})", ip->to_string(),
               pipeline::seconds_rounded_up(*lasting), request.peer);
  co_return json_response(
      request, http::status::ok,
      {{"ip", ip->to_string()}, {"banned_for", pipeline::seconds_rounded_up(*lasting)}});
}

io::Awaitable<AdminResponse> unban(const AdminRequest& request, http::LoopContext& context) {
  std::variant<pipeline::IpAddress, AdminResponse> named = ip_of(request);
  if (AdminResponse* refused = std::get_if<AdminResponse>(&named)) {
    co_return std::move(*refused);
  }
  const pipeline::IpAddress* ip = &std::get<pipeline::IpAddress>(named);
  const std::shared_ptr<const live::Generation> generation = context.generations.get();
  const limiter::TimePoint now = context.proxy.clock.now();
  bool existed = false;
  try {
    if (context.proxy.store->shares_control()) {
      const std::string field = ip->to_string();
      existed =
          co_await context.proxy.store->write_control(context.index, "bans", field, std::nullopt);
    }
  } catch (const store::StoreError& error) {
    co_return store_failed(request, error);
  }
  existed = context.proxy.control->remove_ban(*ip, *generation->config, now) || existed;
  existed = generation->pipeline.lift_ban(*ip, now) || existed;  // one `ban:` gave
  if (!existed) {
    co_return problem(request, http::status::not_found, ip->to_string() + " is not banned");
  }
  spdlog::info("admin: unban {} (from {})", ip->to_string(), request.peer);
  co_return json_response(request, http::status::ok, {{"ip", ip->to_string()}, {"banned", false}});
}

/// Seconds left until `at`, rounded up.
std::uint64_t seconds_until(limiter::TimePoint at, limiter::TimePoint now) {
  return pipeline::seconds_rounded_up(at - now);
}

/// The shared tables read again, so that a read on one replica shows what another just wrote;
/// when the store does not answer, what was read last.
io::Awaitable<void> pull_if_shared(http::LoopContext& context) {
  try {
    co_await pull_shared_control(context);
  } catch (const store::StoreError&) {
    // follow_runtime_control logs the outage
  }
}

}  // namespace

std::optional<AdminAction> runtime_action(const AdminRequest& request) {
  const http::verb method = request.message.method();
  const bool put = method == http::verb::put;
  const bool del = method == http::verb::delete_;
  const std::string_view path = request.path;
  if (path.starts_with("/limiters/") && (put || del)) {
    return put ? AdminAction::override : AdminAction::reset;
  }
  if (path.starts_with("/overrides/") && del) {
    return AdminAction::unoverride;
  }
  if (path.starts_with("/bans/") && (put || del)) {
    return put ? AdminAction::ban : AdminAction::unban;
  }
  return std::nullopt;
}

io::Awaitable<AdminResponse> runtime_write(const AdminRequest& request, http::LoopContext& context,
                                           AdminAction action) {
  switch (action) {
    case AdminAction::reset:
      co_return co_await reset(request, context);
    case AdminAction::override:
      co_return co_await set_override(request, context);
    case AdminAction::unoverride:
      co_return co_await end_override(request, context);
    case AdminAction::ban:
      co_return co_await ban(request, context);
    case AdminAction::unban:
      co_return co_await unban(request, context);
    case AdminAction::reload:
      break;
  }
  co_return problem(request, http::status::not_found);
}

io::Awaitable<AdminResponse> overrides_list(const AdminRequest& request,
                                            http::LoopContext& context) {
  co_await pull_if_shared(context);
  const std::shared_ptr<const live::Generation> generation = context.generations.get();
  const limiter::TimePoint now = context.proxy.clock.now();
  json::array list;
  for (const pipeline::OverrideEntry& entry : context.proxy.control->overrides(now)) {
    boost::system::error_code error;
    json::value parameters = json::parse(entry.parameters, error);
    list.push_back(json::object{
        {"limiter", entry.limiter},
        {"key", key_shown(generation->config->limiter_named(entry.limiter), entry.key)},
        {"parameters", std::move(parameters)},
        {"expires_in", seconds_until(entry.expires_at, now)}});
  }
  co_return json_response(request, http::status::ok, {{"overrides", std::move(list)}});
}

io::Awaitable<AdminResponse> bans_list(const AdminRequest& request, http::LoopContext& context) {
  co_await pull_if_shared(context);
  const limiter::TimePoint now = context.proxy.clock.now();
  json::array list;
  for (const pipeline::BanEntry& entry : context.proxy.control->bans(now)) {
    list.push_back(json::object{{"ip", entry.ip.to_string()},
                                {"banned_for", seconds_until(entry.expires_at, now)}});
  }
  co_return json_response(request, http::status::ok, {{"bans", std::move(list)}});
}

}  // namespace sluice::admin
