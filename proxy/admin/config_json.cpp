#include "proxy/admin/config_json.hpp"

#include <fmt/format.h>

#include <boost/json/array.hpp>
#include <boost/json/object.hpp>
#include <boost/json/serialize.hpp>
#include <boost/json/value.hpp>
#include <cmath>

#include "config/units.hpp"
#include "config/url.hpp"
#include "limiter/validate.hpp"

namespace sluice::admin {
namespace {

namespace json = boost::json;

/// A whole number as an integer, as the file writes it (`burst: 20` reads "burst":20, not the
/// serializer's 2E1); any other number as a double.
json::value number(double value) {
  constexpr double kExactIntegers = 9007199254740992.0;  // 2^53
  if (std::trunc(value) == value && std::abs(value) <= kExactIntegers) {
    return static_cast<std::int64_t>(value);
  }
  return value;
}

std::string host_port(const config::HostPort& address) {
  return address.host.find(':') != std::string::npos
             ? fmt::format("[{}]:{}", address.host, address.port)
             : fmt::format("{}:{}", address.host, address.port);
}

json::array cidrs(const std::vector<config::Cidr>& networks) {
  json::array list;
  for (const config::Cidr& network : networks) {
    list.emplace_back(config::to_string(network));
  }
  return list;
}

/// Each listener's address, and its TLS settings (the files it reads, not what they hold).
json::array listeners(const std::vector<config::Listener>& list) {
  json::array out;
  for (const config::Listener& listener : list) {
    json::object item;
    item["address"] = host_port(listener.address);
    if (const auto& tls = listener.tls) {
      static constexpr std::string_view kClientCert[] = {"none", "optional", "require"};
      item["tls"] = {{"cert", tls->cert},
                     {"key", tls->key},
                     {"min_version", tls->min_version == config::TlsVersion::v1_3 ? "1.3" : "1.2"},
                     {"client_ca", tls->client_ca},
                     {"client_cert", kClientCert[static_cast<int>(tls->client_cert)]},
                     {"ciphers", tls->ciphers},
                     {"curves", tls->curves},
                     {"ocsp", tls->ocsp},
                     {"ocsp_fetch", tls->ocsp_fetch}};
    }
    out.push_back(std::move(item));
  }
  return out;
}

json::array strings(const std::vector<std::string>& texts) {
  json::array list;
  for (const std::string& text : texts) {
    list.emplace_back(text);
  }
  return list;
}

std::string_view name_of(config::LimitsHeaders headers) {
  switch (headers) {
    case config::LimitsHeaders::draft:
      return "draft";
    case config::LimitsHeaders::legacy:
      return "legacy";
    case config::LimitsHeaders::both:
      return "both";
    case config::LimitsHeaders::none:
      return "none";
  }
  return "both";
}

/// The parameters of one algorithm, as the file names them.
void add_limiter_options(json::object& out, const limiter::LimiterOptions& options) {
  using limiter::AlgorithmKind;
  out["algorithm"] = limiter::name_of(options.algorithm);
  switch (options.algorithm) {
    case AlgorithmKind::token_bucket:
    case AlgorithmKind::leaky_bucket:
      out["rate"] = config::format_rate(options.rate);
      if (options.burst) {
        out["burst"] = number(*options.burst);
      }
      if (options.warmup > limiter::Duration::zero()) {
        out["warmup"] = limiter::format_duration(options.warmup);
        out["cold_factor"] = number(options.cold_factor);
      }
      break;
    case AlgorithmKind::concurrency:
      out["limit"] = options.limit;
      break;
    case AlgorithmKind::fixed_window:
    case AlgorithmKind::sliding_log:
    case AlgorithmKind::sliding_window:
    case AlgorithmKind::wheel:
      out["limit"] = options.limit;
      if (options.calendar != limiter::Calendar::none) {
        out["calendar"] = limiter::name_of(options.calendar);
        out["timezone"] = options.time_zone != nullptr ? options.time_zone->name() : "UTC";
      } else {
        out["window"] = limiter::format_duration(options.window);
      }
      if (options.algorithm == AlgorithmKind::wheel) {
        out["slots"] = options.slots;
      }
      break;
  }
  out["mode"] = options.policy.mode == limiter::Mode::delay ? "delay" : "reject";
  if (options.policy.mode == limiter::Mode::delay) {
    out["max_delay"] = limiter::format_duration(options.policy.max_delay);
  }
}

/// Overrides or tiers: each value (as `***` when `values_of` is a secret key) and its parameters.
json::array other_parameters(const std::vector<config::Override>& others,
                             const config::KeySpec& values_of, std::string_view label) {
  bool secret = false;
  for (const config::KeyPart& part : values_of.parts) {
    secret = secret || part.secret();
  }
  json::array out;
  for (const config::Override& other : others) {
    json::object item;
    item[label] = secret ? "***" : other.value;
    add_limiter_options(item, other.options);
    out.emplace_back(std::move(item));
  }
  return out;
}

/// `lease_holders`: 0 when leases do not apply (the memory store decides exactly).
json::object limiter_config(const config::LimiterConfig& limiter, std::uint64_t lease_holders) {
  json::object out;
  add_limiter_options(out, limiter.options);
  out["key"] = limiter.key.text;
  if (limiter.ipv6_prefix != 128) {
    out["ipv6_prefix"] = limiter.ipv6_prefix;
  }
  out["shadow"] = limiter.shadow;
  out["status"] = limiter.status;
  if (limiter.lease != 0) {
    out["lease"] = limiter.lease;
  }
  if (limiter.lease != 0 && lease_holders != 0) {
    // The most a key may admit beyond its limit over any span (docs/operations.md, "Leases").
    out["overshoot_bound"] = {{"permits", limiter.lease * lease_holders},
                              {"lease_holders", lease_holders},
                              {"per", "lease x lease holders (event loops of all replicas)"}};
  }
  if (limiter.cost_from_response) {
    out["cost"] = "response";
  }
  if (!limiter.count_if_status.empty()) {
    json::array statuses;
    for (const unsigned status : limiter.count_if_status) {
      statuses.emplace_back(status);
    }
    out["count_if"] = {{"status", std::move(statuses)}};
  }
  out["overrides"] = other_parameters(limiter.overrides, limiter.key, "key");
  if (limiter.tier) {
    out["tier"] = limiter.tier->text;
    out["tiers"] = other_parameters(limiter.tiers, *limiter.tier, "value");
  }
  return out;
}

json::object route_match(const config::RouteMatch& match) {
  json::object out;
  switch (match.path_kind) {
    case config::RouteMatch::Path::exact:
      out["path"] = match.path;
      break;
    case config::RouteMatch::Path::prefix:
      out["path_prefix"] = match.path;
      break;
    case config::RouteMatch::Path::regex:
      out["path_regex"] = match.path;
      break;
    case config::RouteMatch::Path::any:
      break;
  }
  if (!match.methods.empty()) {
    out["methods"] = strings(match.methods);
  }
  if (match.host) {
    out["host"] = *match.host;
  }
  if (!match.headers.empty()) {
    json::array headers;
    for (const config::HeaderCondition& header : match.headers) {
      json::object condition;
      condition["name"] = header.name;
      if (header.value) {
        condition["value"] = *header.value;
      } else {
        condition["present"] = header.present;
      }
      headers.emplace_back(std::move(condition));
    }
    out["headers"] = std::move(headers);
  }
  return out;
}

/// Where a route reads its responses' cost, in the file's words.
json::object cost_from(const config::CostFrom& from) {
  using Source = config::CostFrom::Source;
  json::object out;
  switch (from.source) {
    case Source::usage:
      out["usage"] = from.usage == config::CostFrom::Usage::openai ? "openai" : "anthropic";
      out["count"] = from.count == config::CostFrom::Count::total   ? "total"
                     : from.count == config::CostFrom::Count::input ? "input"
                                                                    : "output";
      out["include_usage"] = from.include_usage;
      break;
    case Source::header:
      out["header"] = from.field;
      break;
    case Source::json:
      out["json"] = from.field;
      break;
    case Source::bytes:
      out["bytes"] = "response";
      break;
  }
  out["estimate"] = from.estimate;
  return out;
}

json::object route(const config::Route& route) {
  json::object out;
  out["name"] = route.name;
  out["match"] = route_match(route.match);
  if (route.upstream) {
    out["upstream"] = config::redact_url(route.upstream->url);
  }
  out["limiters"] = strings(route.limiters);
  out["cost"] = route.cost;
  if (route.respond) {
    out["respond"] = {{"status", route.respond->status}, {"body", route.respond->body}};
  }
  if (route.auth) {
    out["auth"] = {{"jwt", route.auth->provider}, {"required", route.auth->required}};
  }
  if (route.cost_from) {
    out["cost_from"] = cost_from(*route.cost_from);
  }
  return out;
}

/// A JWT provider as configured: where its keys come from (a secret shown as ***).
json::object jwt_provider(const config::JwtProviderConfig& provider) {
  json::object out;
  out["issuer"] = provider.issuer;
  out["audiences"] = strings(provider.audiences);
  out["algorithms"] = strings(provider.algorithms);
  if (!provider.jwks_url.empty()) {
    out["jwks"] = {{"url", config::redact_url(provider.jwks_url)},
                   {"refresh", limiter::format_duration(provider.jwks_refresh)}};
  } else if (!provider.jwks_file.empty()) {
    out["jwks"] = {{"file", provider.jwks_file}};
  }
  json::array keys;
  for (const config::JwtKeyConfig& key : provider.keys) {
    keys.push_back(key.file.empty() ? json::object{{"secret", "***"}, {"alg", key.algorithm}}
                                    : json::object{{"file", key.file}, {"alg", key.algorithm}});
  }
  if (!keys.empty()) {
    out["keys"] = std::move(keys);
  }
  json::array from;
  for (const config::KeyPart& place : provider.from) {
    from.emplace_back(place.kind == config::KeyPart::Kind::bearer   ? std::string("bearer")
                      : place.kind == config::KeyPart::Kind::cookie ? "cookie:" + place.name
                      : place.kind == config::KeyPart::Kind::header ? "header:" + place.name
                                                                    : "query:" + place.name);
  }
  out["from"] = std::move(from);
  out["leeway"] = limiter::format_duration(provider.leeway);
  json::object claims;
  for (const auto& [claim, header] : provider.claims_to_headers) {
    claims[claim] = header;
  }
  out["claims_to_headers"] = std::move(claims);
  return out;
}

/// The `rls` domains (SPEC §11): each rule's entries and the limiter that decides it.
json::array rls_domains(const std::vector<config::RlsDomain>& domains) {
  json::array out;
  for (const config::RlsDomain& domain : domains) {
    json::array rules;
    for (const config::RlsRule& rule : domain.rules) {
      json::array entries;
      for (const config::RlsEntry& entry : rule.entries) {
        json::object one{{"key", entry.key}};
        if (entry.value) {
          one["value"] = *entry.value;
        }
        entries.push_back(std::move(one));
      }
      json::object item{{"entries", std::move(entries)}};
      if (rule.limiter.empty()) {
        item["unlimited"] = true;
      } else {
        item["limiter"] = rule.limiter;
      }
      rules.push_back(std::move(item));
    }
    json::object item{{"domain", domain.domain}, {"descriptors", std::move(rules)}};
    if (!domain.file.empty()) {
      item["envoy_config"] = domain.file;
    }
    out.push_back(std::move(item));
  }
  return out;
}

}  // namespace

std::string config_json(const config::ProxyConfig& config, std::uint64_t lease_holders) {
  json::object out;
  out["file"] = config.file;
  out["listen"] = listeners(config.listeners);
  out["admin"] = config.admin ? host_port(*config.admin) : "";
  if (config.decide) {
    out["decide"] = std::move(listeners({*config.decide}).at(0));
    out["rls"] = rls_domains(config.rls);
  }
  // Whether writes need a token, never the token.
  out["admin_token"] = config.admin_token.empty() ? "" : "***";
  out["threads"] = config.threads;
  out["max_connections"] = config.max_connections;
  out["watch"] = config.watch;
  out["top_keys"] = config.top_keys;
  if (config.upstream) {
    out["upstream"] = config::redact_url(config.upstream->url);
  }
  out["http2"] = {{"enabled", config.http2.enabled},
                  {"max_concurrent_streams", config.http2.max_concurrent_streams}};
  out["trusted_proxies"] = cidrs(config.trusted_proxies);
  out["timeouts"] = {{"header", limiter::format_duration(config.timeouts.header)},
                     {"idle", limiter::format_duration(config.timeouts.idle)},
                     {"connect", limiter::format_duration(config.timeouts.connect)},
                     {"upstream", limiter::format_duration(config.timeouts.upstream)},
                     {"drain", limiter::format_duration(config.timeouts.drain)}};
  out["limits_headers"] = name_of(config.limits_headers);
  out["log"] = {{"level", config.log.level},
                {"format", config.log.format == config::LogFormat::json ? "json" : "text"},
                {"access", config.log.access}};
  json::object store;
  store["type"] = config.store.type == config::StoreType::redis ? "redis" : "memory";
  store["max_keys"] = config.store.max_keys;
  if (config.store.type == config::StoreType::redis) {
    const config::RedisOptions& redis = config.store.redis;
    store["redis"] = {{"url", config::redact_url(redis.url)},
                      {"prefix", redis.prefix},
                      {"timeout", limiter::format_duration(redis.timeout)},
                      {"pool", redis.pool},
                      {"on_error", name_of(redis.on_error)},
                      {"cluster", redis.cluster}};
  }
  out["store"] = std::move(store);
  if (!config.jwt_providers.empty()) {
    json::object providers;
    for (const config::JwtProviderConfig& provider : config.jwt_providers) {
      providers[provider.name] = jwt_provider(provider);
    }
    out["auth"] = {{"jwt", std::move(providers)}};
  }
  json::object limiters;
  for (const config::LimiterConfig& limiter : config.limiters) {
    limiters[limiter.name] =
        limiter_config(limiter, config.store.type == config::StoreType::redis ? lease_holders : 0);
  }
  out["limiters"] = std::move(limiters);
  out["deny"] = cidrs(config.deny);
  if (config.ban) {
    out["ban"] = {{"after", config.ban->after},
                  {"within", limiter::format_duration(config.ban->within)},
                  {"for", limiter::format_duration(config.ban->duration)}};
  }
  json::array routes;
  for (const config::Route& each : config.routes) {
    routes.emplace_back(route(each));
  }
  out["routes"] = std::move(routes);
  return json::serialize(out) + "\n";
}

}  // namespace sluice::admin
