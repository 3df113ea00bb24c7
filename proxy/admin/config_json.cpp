#include "proxy/admin/config_json.hpp"

#include <fmt/format.h>

#include <iterator>

#include "config/units.hpp"
#include "config/url.hpp"
#include "limiter/validate.hpp"

namespace sluice::proxy {
namespace {

/// Builds JSON text; `key` adds `"name":` with the comma that separates members.
class JsonWriter {
 public:
  void open(char bracket) {
    separate();
    out_ += bracket;
    first_ = true;
  }
  void close(char bracket) {
    out_ += bracket;
    first_ = false;
  }
  void key(std::string_view name) {
    separate();
    string_value(name);
    out_ += ':';
    first_ = true;  // the value follows without a comma
  }
  void string(std::string_view text) {
    separate();
    string_value(text);
  }
  void raw(std::string_view text) {
    separate();
    out_ += text;
  }
  template <class Number>
  void number(Number value) {
    raw(fmt::format("{}", value));
  }
  void boolean(bool value) { raw(value ? "true" : "false"); }
  std::string take() { return std::move(out_); }

 private:
  void separate() {
    if (!first_) {
      out_ += ',';
    }
    first_ = false;
  }
  void string_value(std::string_view text) {
    out_ += '"';
    for (const char c : text) {
      const auto byte = static_cast<unsigned char>(c);
      if (c == '"' || c == '\\') {
        out_ += '\\';
        out_ += c;
      } else if (byte < 0x20) {
        fmt::format_to(std::back_inserter(out_), "\\u{:04x}", byte);
      } else {
        out_ += c;
      }
    }
    out_ += '"';
  }

  std::string out_;
  bool first_ = true;
};

void member(JsonWriter& json, std::string_view name, std::string_view value) {
  json.key(name);
  json.string(value);
}

void host_port(JsonWriter& json, std::string_view name, const config::HostPort& address) {
  member(json, name,
         address.host.find(':') != std::string::npos
             ? fmt::format("[{}]:{}", address.host, address.port)
             : fmt::format("{}:{}", address.host, address.port));
}

void cidrs(JsonWriter& json, std::string_view name, const std::vector<config::Cidr>& networks) {
  json.key(name);
  json.open('[');
  for (const config::Cidr& network : networks) {
    json.string(config::to_string(network));
  }
  json.close(']');
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
void limiter_options(JsonWriter& json, const limiter::LimiterOptions& options) {
  using limiter::AlgorithmKind;
  member(json, "algorithm", limiter::name_of(options.algorithm));
  switch (options.algorithm) {
    case AlgorithmKind::token_bucket:
    case AlgorithmKind::leaky_bucket:
      member(json, "rate", config::format_rate(options.rate));
      if (options.burst) {
        json.key("burst");
        json.number(*options.burst);
      }
      if (options.warmup > limiter::Duration::zero()) {
        member(json, "warmup", limiter::format_duration(options.warmup));
        json.key("cold_factor");
        json.number(options.cold_factor);
      }
      break;
    case AlgorithmKind::concurrency:
      json.key("limit");
      json.number(options.limit);
      break;
    case AlgorithmKind::fixed_window:
    case AlgorithmKind::sliding_log:
    case AlgorithmKind::sliding_window:
    case AlgorithmKind::wheel:
      json.key("limit");
      json.number(options.limit);
      member(json, "window", limiter::format_duration(options.window));
      if (options.algorithm == AlgorithmKind::wheel) {
        json.key("slots");
        json.number(options.slots);
      }
      break;
  }
  member(json, "mode", options.policy.mode == limiter::Mode::delay ? "delay" : "reject");
  if (options.policy.mode == limiter::Mode::delay) {
    member(json, "max_delay", limiter::format_duration(options.policy.max_delay));
  }
}

void limiter_config(JsonWriter& json, const config::LimiterConfig& limiter) {
  json.key(limiter.name);
  json.open('{');
  limiter_options(json, limiter.options);
  member(json, "key", limiter.key.text);
  if (limiter.ipv6_prefix != 128) {
    json.key("ipv6_prefix");
    json.number(limiter.ipv6_prefix);
  }
  json.key("shadow");
  json.boolean(limiter.shadow);
  json.key("status");
  json.number(limiter.status);
  bool secret_key = false;
  for (const config::KeyPart& part : limiter.key.parts) {
    secret_key = secret_key || part.secret();
  }
  json.key("overrides");
  json.open('[');
  for (const config::Override& override : limiter.overrides) {
    json.open('{');
    member(json, "key", secret_key ? "***" : override.value);
    limiter_options(json, override.options);
    json.close('}');
  }
  json.close(']');
  json.close('}');
}

void route(JsonWriter& json, const config::Route& route) {
  json.open('{');
  member(json, "name", route.name);
  json.key("match");
  json.open('{');
  switch (route.match.path_kind) {
    case config::RouteMatch::Path::exact:
      member(json, "path", route.match.path);
      break;
    case config::RouteMatch::Path::prefix:
      member(json, "path_prefix", route.match.path);
      break;
    case config::RouteMatch::Path::regex:
      member(json, "path_regex", route.match.path);
      break;
    case config::RouteMatch::Path::any:
      break;
  }
  if (!route.match.methods.empty()) {
    json.key("methods");
    json.open('[');
    for (const std::string& method : route.match.methods) {
      json.string(method);
    }
    json.close(']');
  }
  if (route.match.host) {
    member(json, "host", *route.match.host);
  }
  if (!route.match.headers.empty()) {
    json.key("headers");
    json.open('[');
    for (const config::HeaderCondition& header : route.match.headers) {
      json.open('{');
      member(json, "name", header.name);
      if (header.value) {
        member(json, "value", *header.value);
      } else {
        json.key("present");
        json.boolean(header.present);
      }
      json.close('}');
    }
    json.close(']');
  }
  json.close('}');
  if (route.upstream) {
    member(json, "upstream", config::redact_url(route.upstream->url));
  }
  json.key("limiters");
  json.open('[');
  for (const std::string& name : route.limiters) {
    json.string(name);
  }
  json.close(']');
  json.key("cost");
  json.number(route.cost);
  if (route.respond) {
    json.key("respond");
    json.open('{');
    json.key("status");
    json.number(route.respond->status);
    member(json, "body", route.respond->body);
    json.close('}');
  }
  json.close('}');
}

}  // namespace

std::string json_string(std::string_view text) {
  JsonWriter json;
  json.string(text);
  return json.take();
}

std::string config_json(const config::ProxyConfig& config) {
  JsonWriter json;
  json.open('{');
  member(json, "file", config.file);
  host_port(json, "listen", config.listen);
  if (config.admin) {
    host_port(json, "admin", *config.admin);
  } else {
    member(json, "admin", "");
  }
  json.key("threads");
  json.number(config.threads);
  json.key("max_connections");
  json.number(config.max_connections);
  if (config.upstream) {
    member(json, "upstream", config::redact_url(config.upstream->url));
  }
  cidrs(json, "trusted_proxies", config.trusted_proxies);
  json.key("timeouts");
  json.open('{');
  member(json, "header", limiter::format_duration(config.timeouts.header));
  member(json, "idle", limiter::format_duration(config.timeouts.idle));
  member(json, "connect", limiter::format_duration(config.timeouts.connect));
  member(json, "upstream", limiter::format_duration(config.timeouts.upstream));
  member(json, "drain", limiter::format_duration(config.timeouts.drain));
  json.close('}');
  member(json, "limits_headers", name_of(config.limits_headers));
  json.key("log");
  json.open('{');
  member(json, "level", config.log.level);
  member(json, "format", config.log.format == config::LogFormat::json ? "json" : "text");
  json.key("access");
  json.boolean(config.log.access);
  json.close('}');
  json.key("store");
  json.open('{');
  member(json, "type", config.store.type == config::StoreType::redis ? "redis" : "memory");
  json.key("max_keys");
  json.number(config.store.max_keys);
  if (config.store.type == config::StoreType::redis) {
    json.key("redis");
    json.open('{');
    member(json, "url", config::redact_url(config.store.redis.url));
    member(json, "prefix", config.store.redis.prefix);
    member(json, "timeout", limiter::format_duration(config.store.redis.timeout));
    json.key("pool");
    json.number(config.store.redis.pool);
    member(json, "on_error", name_of(config.store.redis.on_error));
    json.close('}');
  }
  json.close('}');
  json.key("limiters");
  json.open('{');
  for (const config::LimiterConfig& limiter : config.limiters) {
    limiter_config(json, limiter);
  }
  json.close('}');
  cidrs(json, "deny", config.deny);
  if (config.ban) {
    json.key("ban");
    json.open('{');
    json.key("after");
    json.number(config.ban->after);
    member(json, "within", limiter::format_duration(config.ban->within));
    member(json, "for", limiter::format_duration(config.ban->duration));
    json.close('}');
  }
  json.key("routes");
  json.open('[');
  for (const config::Route& each : config.routes) {
    route(json, each);
  }
  json.close(']');
  json.close('}');
  return json.take() + "\n";
}

}  // namespace sluice::proxy
