#include "config/load_config.hpp"

#include <algorithm>
#include <fstream>
#include <sstream>

#include "config/addresses.hpp"
#include "config/read_auth.hpp"
#include "config/read_limiters.hpp"
#include "config/read_rls.hpp"
#include "config/read_routes.hpp"
#include "config/yaml_reader.hpp"

namespace sluice::config {
namespace {

std::optional<HostPort> read_host_port(MapReader& reader, std::string_view key) {
  const std::optional<std::string> text = reader.text(key);
  if (!text) {
    return std::nullopt;
  }
  std::optional<HostPort> address = parse_host_port(*text);
  if (!address) {
    reader.error(key, "\"" + *text + "\" is not host:port (0.0.0.0:8080, [::]:8080)");
  }
  return address;
}

std::vector<Cidr> read_networks(MapReader& reader, std::string_view key, ReadContext& context) {
  std::vector<Cidr> networks;
  for (const auto& [text, where] : reader.located_texts(key)) {
    if (std::optional<Cidr> network = parse_cidr(text)) {
      networks.push_back(*network);
    } else {
      context.diagnostics.error(where, reader.path(key) + ": \"" + text +
                                           "\" is not an IPv4 or IPv6 network (10.0.0.0/8, "
                                           "2001:db8::/32)");
    }
  }
  return networks;
}

/// A `tls` mapping of a listener (SPEC §7). Its files are read later (proxy/tls/).
std::optional<ListenerTls> read_listener_tls(MapReader& owner) {
  auto section = owner.section("tls", {"cert", "key", "min_version", "client_ca", "client_cert",
                                       "ciphers", "curves", "ocsp", "ocsp_fetch"});
  if (!section) {
    return std::nullopt;
  }
  MapReader& reader = *section;
  ListenerTls tls;
  tls.path = reader.path();
  tls.cert_at = reader.at("cert");
  tls.key_at = reader.at("key");
  tls.client_ca_at = reader.at("client_ca");
  tls.ciphers_at = reader.at("ciphers");
  tls.curves_at = reader.at("curves");
  tls.ciphers = reader.text("ciphers").value_or("");
  tls.curves = reader.text("curves").value_or("");
  tls.ocsp_at = reader.at("ocsp");
  tls.ocsp = reader.text("ocsp").value_or("");
  tls.ocsp_fetch = reader.flag("ocsp_fetch").value_or(true);
  const bool has_cert = reader.require("cert");
  const bool has_key = reader.require("key");
  tls.cert = reader.text("cert").value_or("");
  tls.key = reader.text("key").value_or("");
  tls.min_version =
      reader
          .choice<TlsVersion>("min_version", {{"1.2", TlsVersion::v1_2}, {"1.3", TlsVersion::v1_3}})
          .value_or(TlsVersion::v1_2);
  tls.client_ca = reader.text("client_ca").value_or("");
  const std::optional<ClientCertificates> client_cert =
      reader.choice<ClientCertificates>("client_cert", {{"none", ClientCertificates::none},
                                                        {"optional", ClientCertificates::optional},
                                                        {"require", ClientCertificates::require}});
  tls.client_cert = client_cert.value_or(tls.client_ca.empty() ? ClientCertificates::none
                                                               : ClientCertificates::require);
  if (tls.client_ca.empty() && tls.client_cert != ClientCertificates::none) {
    reader.error("client_cert", "needs client_ca: the CA that signs the clients' certificates");
  }
  if (!has_cert || !has_key) {
    return std::nullopt;
  }
  return tls;
}

/// `listen`: one address (with the top-level `tls` for it), or a list of addresses and
/// {address, tls} mappings.
std::vector<Listener> read_listeners(MapReader& top, ReadContext& context) {
  const YAML::Node node = top.node("listen");
  if (node && node.IsSequence()) {
    if (top.has("tls")) {
      top.error("tls",
                "applies to a single listen address; with a list, give each TLS "
                "address its own: {address: \"0.0.0.0:8443\", tls: {...}}");
    }
    std::vector<Listener> listeners;
    std::vector<std::size_t> items;  // each listener's index in the list
    for (std::size_t i = 0; i < node.size(); ++i) {
      const std::string path = "listen[" + std::to_string(i) + "]";
      const YAML::Node item = node[i];
      if (item.IsMap()) {
        MapReader reader(item, path, {"address", "tls"}, context);
        if (!reader.require("address")) {
          continue;
        }
        std::optional<HostPort> address = read_host_port(reader, "address");
        std::optional<ListenerTls> tls = read_listener_tls(reader);
        if (address) {
          listeners.push_back(Listener{.address = std::move(*address), .tls = std::move(tls)});
          items.push_back(i);
        }
        continue;
      }
      const std::optional<std::string> text = scalar_text(item, path, context);
      std::optional<HostPort> address = text ? parse_host_port(*text) : std::nullopt;
      if (!address) {
        if (text) {
          context.diagnostics.error(
              location_of(item),
              path + ": \"" + *text + "\" is not host:port (0.0.0.0:8080, [::]:8080)");
        }
        continue;
      }
      listeners.push_back(Listener{.address = std::move(*address), .tls = std::nullopt});
      items.push_back(i);
    }
    if (node.size() == 0) {
      top.error("listen", "an empty list: give at least one address");
    }
    for (std::size_t i = 0; i < listeners.size(); ++i) {
      for (std::size_t j = 0; j < i; ++j) {
        // Port 0 is a port the system picks: never the same one twice.
        if (listeners[i].address == listeners[j].address && listeners[i].address.port != 0) {
          context.diagnostics.error(location_of(node[items[i]]),
                                    "listen[" + std::to_string(items[i]) +
                                        "]: the same address as listen[" +
                                        std::to_string(items[j]) + "]");
        }
      }
    }
    return listeners;
  }
  Listener listener{.address = read_host_port(top, "listen").value_or(HostPort{"0.0.0.0", 8080}),
                    .tls = read_listener_tls(top)};
  return {std::move(listener)};
}

/// `decide` (SPEC §11): "host:port", or {address, tls} for a TLS listener; "" turns it off.
std::optional<Listener> read_decide(MapReader& top, ReadContext& context) {
  const YAML::Node node = top.node("decide");
  if (!node) {
    return std::nullopt;
  }
  if (node.IsMap()) {
    MapReader reader(node, "decide", {"address", "tls"}, context);
    if (!reader.require("address")) {
      return std::nullopt;
    }
    std::optional<HostPort> address = read_host_port(reader, "address");
    std::optional<ListenerTls> tls = read_listener_tls(reader);
    if (!address) {
      return std::nullopt;
    }
    return Listener{.address = std::move(*address), .tls = std::move(tls)};
  }
  if (top.text("decide").value_or("").empty()) {
    return std::nullopt;
  }
  std::optional<HostPort> address = read_host_port(top, "decide");
  if (!address) {
    return std::nullopt;
  }
  return Listener{.address = std::move(*address), .tls = std::nullopt};
}

UpstreamTls read_upstream_tls(MapReader& top) {
  UpstreamTls tls;
  auto section = top.section("upstream_tls", {"ca", "verify", "server_name", "cert", "key"});
  if (!section) {
    return tls;
  }
  MapReader& reader = *section;
  tls.ca_at = reader.at("ca");
  tls.cert_at = reader.at("cert");
  tls.key_at = reader.at("key");
  tls.ca = reader.text("ca").value_or("");
  tls.verify = reader.flag("verify").value_or(true);
  tls.server_name = reader.text("server_name").value_or("");
  tls.cert = reader.text("cert").value_or("");
  tls.key = reader.text("key").value_or("");
  if (tls.cert.empty() != tls.key.empty()) {
    reader.error(tls.cert.empty() ? "cert" : "key", "missing: cert and key go together");
  }
  return tls;
}

Http2Options read_http2(MapReader& top) {
  Http2Options http2;
  auto section = top.section("http2", {"enabled", "max_concurrent_streams"});
  if (!section) {
    return http2;
  }
  MapReader& reader = *section;
  http2.enabled = reader.flag("enabled").value_or(true);
  http2.max_concurrent_streams =
      static_cast<std::uint32_t>(reader.whole_number("max_concurrent_streams", 1, 65536)
                                     .value_or(http2.max_concurrent_streams));
  return http2;
}

/// `cert:` keys read the client certificate: some TLS listener must ask for one.
void check_certificate_keys(const ProxyConfig& config, ReadContext& context) {
  const bool asks =
      std::any_of(config.listeners.begin(), config.listeners.end(), [](const Listener& listener) {
        return listener.tls && listener.tls->client_cert != ClientCertificates::none;
      });
  if (asks) {
    return;
  }
  for (const LimiterConfig& limiter : config.limiters) {
    for (const KeyPart& part : limiter.key.parts) {
      if (part.kind == KeyPart::Kind::cert_subject || part.kind == KeyPart::Kind::cert_san ||
          part.kind == KeyPart::Kind::cert_fingerprint) {
        context.diagnostics.error(limiter.at, "limiters." + limiter.name + ".key: \"" +
                                                  limiter.key.text +
                                                  "\" reads the client certificate, but no "
                                                  "listener asks for one (tls.client_ca)");
        break;
      }
    }
  }
}

Timeouts read_timeouts(MapReader& top) {
  Timeouts timeouts;
  auto section = top.section("timeouts", {"header", "idle", "connect", "upstream", "drain"});
  if (!section) {
    return timeouts;
  }
  MapReader& reader = *section;
  const std::pair<std::string_view, Duration*> fields[] = {{"header", &timeouts.header},
                                                           {"idle", &timeouts.idle},
                                                           {"connect", &timeouts.connect},
                                                           {"upstream", &timeouts.upstream},
                                                           {"drain", &timeouts.drain}};
  for (const auto& [key, field] : fields) {
    if (const auto value = reader.duration(key)) {
      if (*value <= Duration::zero()) {
        reader.error(key, "must be positive");
      } else {
        *field = *value;
      }
    }
  }
  return timeouts;
}

LogOptions read_log(MapReader& top) {
  LogOptions log;
  auto section = top.section("log", {"level", "format", "access"});
  if (!section) {
    return log;
  }
  MapReader& reader = *section;
  if (auto level = reader.choice<std::string>("level", {{"trace", "trace"},
                                                        {"debug", "debug"},
                                                        {"info", "info"},
                                                        {"warn", "warn"},
                                                        {"error", "error"},
                                                        {"critical", "critical"},
                                                        {"off", "off"}})) {
    log.level = *level;
  }
  log.format =
      reader.choice<LogFormat>("format", {{"text", LogFormat::text}, {"json", LogFormat::json}})
          .value_or(LogFormat::text);
  log.access = reader.flag("access").value_or(true);
  return log;
}

StoreOptions read_store(MapReader& top) {
  StoreOptions store;
  auto section = top.section("store", {"type", "max_keys", "redis"});
  if (!section) {
    return store;
  }
  MapReader& reader = *section;
  store.type =
      reader.choice<StoreType>("type", {{"memory", StoreType::memory}, {"redis", StoreType::redis}})
          .value_or(StoreType::memory);
  store.max_keys = reader.whole_number("max_keys", 1, 1'000'000'000).value_or(store.max_keys);
  if (auto section_redis =
          reader.section("redis", {"url", "prefix", "timeout", "pool", "on_error", "cluster"})) {
    MapReader& redis = *section_redis;
    if (auto url = redis.text("url")) {
      std::string problem;
      if (auto endpoint = parse_redis_url(*url, problem)) {
        store.redis.endpoint = std::move(*endpoint);
      } else {
        redis.error("url", problem);
      }
      store.redis.url = *url;
    }
    store.redis.prefix = redis.text("prefix").value_or(store.redis.prefix);
    if (auto timeout = redis.duration("timeout")) {
      if (*timeout <= Duration::zero()) {
        redis.error("timeout", "must be positive");
      } else {
        store.redis.timeout = *timeout;
      }
    }
    store.redis.pool = static_cast<unsigned>(redis.whole_number("pool", 1, 64).value_or(4));
    store.redis.on_error = redis
                               .choice<OnStoreError>("on_error", {{"allow", OnStoreError::allow},
                                                                  {"deny", OnStoreError::deny},
                                                                  {"local", OnStoreError::local}})
                               .value_or(OnStoreError::allow);
    store.redis.cluster = redis.flag("cluster").value_or(false);
    if (store.redis.cluster && store.redis.endpoint.db != 0) {
      redis.error("url", "a Redis Cluster has only database 0");
    }
  }
  return store;
}

std::optional<BanOptions> read_ban(MapReader& top) {
  auto section = top.section("ban", {"after", "within", "for"});
  if (!section) {
    return std::nullopt;
  }
  MapReader& reader = *section;
  // Each missing key is reported, so all three are asked (clang warns on `&` between bools).
  const bool has_after = reader.require("after");
  const bool has_within = reader.require("within");
  const bool has_for = reader.require("for");
  const bool complete = has_after && has_within && has_for;
  BanOptions ban;
  ban.after = static_cast<std::uint32_t>(reader.whole_number("after", 1, 1'000'000).value_or(0));
  ban.within = reader.duration("within").value_or(Duration::zero());
  ban.duration = reader.duration("for").value_or(Duration::zero());
  for (const auto& [key, value] :
       {std::pair{"within", ban.within}, std::pair{"for", ban.duration}}) {
    if (reader.has(key) && value <= Duration::zero()) {
      reader.error(key, "must be positive");
    }
  }
  return complete ? std::optional(ban) : std::nullopt;
}

ProxyConfig read_config(const YAML::Node& root, const std::string& file, ReadContext& context) {
  ProxyConfig config;
  config.file = file;
  MapReader top(
      root, "",
      {"listen",   "tls",          "admin",    "admin_token",     "threads",  "max_connections",
       "upstream", "upstream_tls", "http2",    "trusted_proxies", "timeouts", "limits_headers",
       "log",      "store",        "auth",     "limiters",        "deny",     "ban",
       "routes",   "watch",        "top_keys", "decide",          "rls"},
      context);
  if (!top.valid()) {
    if (root.IsNull()) {
      context.diagnostics.error({1, 1}, "the file is empty; it needs at least routes");
    }
    return config;
  }
  config.listeners = read_listeners(top, context);
  config.decide = read_decide(top, context);
  if (config.decide && config.decide->address.port != 0) {
    for (const Listener& listener : config.listeners) {
      if (listener.address == config.decide->address) {
        top.error("decide",
                  "the same address as a listen address: give the decision service "
                  "its own port");
      }
    }
  }
  if (top.has("admin")) {
    config.admin =
        top.text("admin").value_or("").empty() ? std::nullopt : read_host_port(top, "admin");
  }
  config.admin_token = top.text("admin_token").value_or("");
  config.threads = static_cast<unsigned>(top.whole_number("threads", 0, 1024).value_or(0));
  config.max_connections = static_cast<std::size_t>(
      top.whole_number("max_connections", 1, 10'000'000).value_or(config.max_connections));
  config.top_keys =
      static_cast<std::size_t>(top.whole_number("top_keys", 0, 1024).value_or(config.top_keys));
  if (auto upstream = top.text("upstream")) {
    std::string problem;
    config.upstream = parse_upstream(*upstream, problem);
    if (!config.upstream) {
      top.error("upstream", problem);
    }
  }
  config.watch = top.flag("watch").value_or(false);
  config.upstream_tls = read_upstream_tls(top);
  config.http2 = read_http2(top);
  config.trusted_proxies = read_networks(top, "trusted_proxies", context);
  config.timeouts = read_timeouts(top);
  config.limits_headers =
      top.choice<LimitsHeaders>("limits_headers", {{"draft", LimitsHeaders::draft},
                                                   {"legacy", LimitsHeaders::legacy},
                                                   {"both", LimitsHeaders::both},
                                                   {"none", LimitsHeaders::none}})
          .value_or(LimitsHeaders::both);
  config.log = read_log(top);
  config.store = read_store(top);
  config.jwt_providers = read_auth(top, context);
  if (top.has("limiters")) {
    config.limiters = read_limiters(top.node("limiters"), config.store.max_keys, context);
  }
  config.deny = read_networks(top, "deny", context);
  config.ban = read_ban(top);
  check_certificate_keys(config, context);
  if (top.require("routes")) {
    config.routes = read_routes(top.node("routes"), config,
                                top.has("upstream") || config.decide.has_value(), context);
    if (config.routes.empty() && top.node("routes").IsSequence()) {
      top.error("routes", "no route: every request would get 404");
    }
  }
  config.rls = read_rls(top, config, context);
  return config;
}

}  // namespace

ProxyConfig parse_config(std::string_view yaml, const std::string& file,
                         const Environment& environment) {
  Diagnostics diagnostics(file);
  ReadContext context{diagnostics, environment};
  YAML::Node root;
  try {
    root = YAML::Load(std::string(yaml));
  } catch (const YAML::Exception& error) {
    diagnostics.error({error.mark.line + 1, error.mark.column + 1}, "not valid YAML: " + error.msg);
    diagnostics.throw_if_any();
  }
  ProxyConfig config = read_config(root, file, context);
  diagnostics.throw_if_any();
  return config;
}

ProxyConfig load_config(const std::string& file, const Environment& environment) {
  std::ifstream in(file);
  if (!in) {
    throw ConfigError(file, {{{}, "cannot read the file"}});
  }
  std::ostringstream text;
  text << in.rdbuf();
  return parse_config(text.str(), file, environment);
}

}  // namespace sluice::config
