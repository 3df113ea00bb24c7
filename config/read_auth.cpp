#include "config/read_auth.hpp"

#include <algorithm>
#include <cctype>

#include "config/did_you_mean.hpp"
#include "config/names.hpp"
#include "config/read_limiters.hpp"
#include "config/url.hpp"

namespace sluice::config {
namespace {

bool is_field_name(std::string_view text) {
  return !text.empty() && std::all_of(text.begin(), text.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) ||
           std::string_view("!#$%&'*+-.^_`|~").find(c) != std::string_view::npos;
  });
}

bool is_loopback_host(std::string_view host) {
  return host == "localhost" || host == "::1" || host == "[::1]" || host.starts_with("127.");
}

/// A JWKS URL: https://, or http:// to a loopback address (a key set read in cleartext from
/// anywhere else could be anyone's).
void read_jwks_url(MapReader& jwks, JwtProviderConfig& provider) {
  const std::optional<std::string> text = jwks.text("url");
  if (!text) {
    return;
  }
  const std::optional<boost::urls::url_view> url = parse_url(*text);
  const bool https = url && url->scheme() == "https";
  const bool local_http = url && url->scheme() == "http" && is_loopback_host(url->host());
  if (!url || url->host().empty() || !(https || local_http)) {
    jwks.error("url", "\"" + redact_url(*text) +
                          "\" is not an https:// URL (http:// only to a loopback address)");
    return;
  }
  provider.jwks_url = *text;
}

void read_jwks(MapReader& reader, JwtProviderConfig& provider) {
  auto section = reader.section("jwks", {"url", "refresh", "file"});
  if (!section) {
    return;
  }
  MapReader& jwks = *section;
  provider.jwks_at = jwks.at();
  if (jwks.has("url") == jwks.has("file")) {
    jwks.error(jwks.has("url") ? "file" : "url",
               "give one of url (fetched, refreshed) and file (read at start and on reload)");
  }
  read_jwks_url(jwks, provider);
  provider.jwks_file = jwks.text("file").value_or("");
  if (const auto refresh = jwks.duration("refresh")) {
    if (!jwks.has("url")) {
      jwks.error("refresh", "only a fetched key set (url) is refreshed");
    } else if (*refresh < std::chrono::seconds(10)) {
      jwks.error("refresh", "at least 10s: an identity provider is not to be polled harder");
    } else {
      provider.jwks_refresh = *refresh;
    }
  }
}

bool known_algorithm(std::string_view name) {
  return std::find(std::begin(kJwsAlgorithmNames), std::end(kJwsAlgorithmNames), name) !=
         std::end(kJwsAlgorithmNames);
}

std::vector<std::string_view> algorithm_names() {
  return {std::begin(kJwsAlgorithmNames), std::end(kJwsAlgorithmNames)};
}

void read_keys(MapReader& reader, JwtProviderConfig& provider, ReadContext& context) {
  if (!reader.has("keys")) {
    return;
  }
  const YAML::Node list = reader.node("keys");
  if (!list.IsSequence() || list.size() == 0) {
    reader.error("keys", "expected a list of {file, alg} or {secret, alg}");
    return;
  }
  for (std::size_t i = 0; i < list.size(); ++i) {
    MapReader key(list[i], reader.path("keys") + "[" + std::to_string(i) + "]",
                  {"file", "secret", "alg"}, context);
    if (!key.valid()) {
      continue;
    }
    JwtKeyConfig read;
    read.at = key.at();
    if (key.has("file") == key.has("secret")) {
      key.error(key.has("file") ? "secret" : "file",
                "give one of file (a PEM public key) and secret (an HMAC secret)");
    }
    read.file = key.text("file").value_or("");
    read.secret = key.text("secret").value_or("");
    if (key.require("alg")) {
      read.algorithm = key.text("alg").value_or("");
      if (!read.algorithm.empty() && !known_algorithm(read.algorithm)) {
        key.error("alg",
                  "\"" + read.algorithm + "\" is not one of " + join_words(algorithm_names()));
        read.algorithm.clear();
      }
    }
    provider.keys.push_back(std::move(read));
  }
}

void read_algorithms(MapReader& reader, JwtProviderConfig& provider, ReadContext& context) {
  const std::vector<std::string_view> accepted = algorithm_names();
  for (const auto& [name, where] : reader.located_texts("algorithms")) {
    if (name == "none" || name == "None" || name == "NONE") {
      context.diagnostics.error(where, reader.path("algorithms") +
                                           ": \"none\" is never accepted (an unsigned token "
                                           "proves nothing)");
    } else if (!known_algorithm(name)) {
      std::string message =
          reader.path("algorithms") + ": \"" + name + "\" is not one of " + join_words(accepted);
      if (const auto suggestion = closest_word(name, accepted)) {
        message += " (did you mean \"" + std::string(*suggestion) + "\"?)";
      }
      context.diagnostics.error(where, message);
    } else if (std::find(provider.algorithms.begin(), provider.algorithms.end(), name) ==
               provider.algorithms.end()) {
      provider.algorithms.push_back(name);
    }
  }
}

void read_from(MapReader& reader, JwtProviderConfig& provider, ReadContext& context) {
  if (!reader.has("from")) {
    return;
  }
  provider.from.clear();
  for (const auto& [text, where] : reader.located_texts("from")) {
    const std::optional<KeyPart> part = parse_key_part(text);
    using Kind = KeyPart::Kind;
    if (!part || (part->kind != Kind::bearer && part->kind != Kind::cookie &&
                  part->kind != Kind::header && part->kind != Kind::query)) {
      context.diagnostics.error(where, reader.path("from") + ": \"" + text +
                                           "\" is not where a token travels; use bearer, "
                                           "cookie:NAME, header:NAME or query:NAME");
      continue;
    }
    provider.from.push_back(*part);
  }
  if (provider.from.empty() && reader.valid()) {
    reader.error("from", "expected at least one place to read the token from");
  }
}

/// Header fields a claim must not be sent in: they frame the message or route it.
bool reserved_field(std::string_view name) {
  static constexpr std::string_view kReserved[] = {
      "host",    "content-length", "transfer-encoding", "connection",   "te",
      "upgrade", "keep-alive",     "trailer",           "authorization"};
  std::string lower(name);
  std::transform(lower.begin(), lower.end(), lower.begin(), [](char c) {
    return static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  });
  return std::find(std::begin(kReserved), std::end(kReserved), lower) != std::end(kReserved);
}

void read_claims_to_headers(MapReader& reader, JwtProviderConfig& provider, ReadContext& context) {
  if (!reader.has("claims_to_headers")) {
    return;
  }
  const YAML::Node map = reader.node("claims_to_headers");
  if (!map.IsMap()) {
    reader.error("claims_to_headers",
                 "expected a mapping of claims to header names (sub: X-User-Id)");
    return;
  }
  for (const auto& entry : map) {
    const std::string claim = entry.first.Scalar();
    const std::string header = entry.second.IsScalar() ? entry.second.Scalar() : "";
    const std::optional<KeyPart> path = parse_key_part("jwt:" + claim);
    const std::string where = reader.path("claims_to_headers") + "." + claim + ": ";
    if (!path) {
      context.diagnostics.error(location_of(entry.first),
                                where + "not a claim (a dotted path: org.id)");
    } else if (!is_field_name(header)) {
      context.diagnostics.error(location_of(entry.second),
                                where + "\"" + header + "\" is not a header field name");
    } else if (reserved_field(header)) {
      context.diagnostics.error(
          location_of(entry.second),
          where + "\"" + header + "\" frames or routes the request; name another header");
    } else {
      provider.claims_to_headers.emplace_back(path->name, header);
    }
  }
}

JwtProviderConfig read_provider(const std::string& name, const YAML::Node& node,
                                const std::string& path, ReadContext& context) {
  JwtProviderConfig provider;
  provider.name = name;
  provider.at = location_of(node);
  MapReader reader(
      node, path,
      {"issuer", "audiences", "jwks", "keys", "algorithms", "from", "leeway", "claims_to_headers"},
      context);
  if (!reader.valid()) {
    if (node.IsNull()) {
      context.diagnostics.error(provider.at, path + ": expected issuer and jwks or keys");
    }
    return provider;
  }
  if (reader.require("issuer")) {
    provider.issuer = reader.text("issuer").value_or("");
  }
  provider.audiences = reader.texts("audiences").value_or(std::vector<std::string>{});
  if (reader.has("jwks") == reader.has("keys")) {
    reader.error(reader.has("jwks") ? "keys" : "jwks",
                 "give one of jwks ({url} or {file}) and keys (PEM files or secrets)");
  }
  read_jwks(reader, provider);
  read_keys(reader, provider, context);
  read_algorithms(reader, provider, context);
  if (provider.algorithms.empty() && !reader.has("algorithms")) {
    // Keys named one by one bring their own algorithms; a key set's must be listed (RFC 8725
    // §3.1: an explicit allow-list, never what a token's header asks for).
    for (const JwtKeyConfig& key : provider.keys) {
      if (!key.algorithm.empty() &&
          std::find(provider.algorithms.begin(), provider.algorithms.end(), key.algorithm) ==
              provider.algorithms.end()) {
        provider.algorithms.push_back(key.algorithm);
      }
    }
    if (reader.has("jwks")) {
      reader.error("jwks",
                   "a key set needs algorithms: the list of those accepted (RS256, ES256, ...)");
    }
  }
  for (const JwtKeyConfig& key : provider.keys) {
    if (!key.algorithm.empty() && reader.has("algorithms") &&
        std::find(provider.algorithms.begin(), provider.algorithms.end(), key.algorithm) ==
            provider.algorithms.end()) {
      context.diagnostics.error(key.at, reader.path("keys") + ": a key for " + key.algorithm +
                                            ", which algorithms does not list");
    }
  }
  read_from(reader, provider, context);
  if (const auto leeway = reader.duration("leeway")) {
    if (*leeway < Duration::zero() || *leeway > std::chrono::minutes(10)) {
      reader.error("leeway", "between 0s and 10m");
    } else {
      provider.leeway = *leeway;
    }
  }
  read_claims_to_headers(reader, provider, context);
  return provider;
}

}  // namespace

std::vector<JwtProviderConfig> read_auth(MapReader& top, ReadContext& context) {
  std::vector<JwtProviderConfig> providers;
  auto section = top.section("auth", {"jwt"});
  if (!section || !section->has("jwt")) {
    return providers;
  }
  const YAML::Node jwt = section->node("jwt");
  if (!jwt.IsMap()) {
    section->error("jwt", "expected a mapping of provider names to providers");
    return providers;
  }
  for (const auto& entry : jwt) {
    const std::string name = entry.first.Scalar();
    if (!plain_name(name)) {
      context.diagnostics.error(location_of(entry.first), "auth.jwt: " + plain_name_problem(name));
    }
    providers.push_back(read_provider(name, entry.second, "auth.jwt." + name, context));
  }
  return providers;
}

std::optional<RouteAuth> read_route_auth(MapReader& route, const ProxyConfig& config) {
  auto section = route.section("auth", {"jwt", "required"});
  if (!section) {
    return std::nullopt;
  }
  MapReader& reader = *section;
  RouteAuth auth;
  if (!reader.require("jwt")) {
    return std::nullopt;
  }
  auth.provider = reader.text("jwt").value_or("");
  auth.required = reader.flag("required").value_or(true);
  if (!config.jwt_provider_named(auth.provider)) {
    std::vector<std::string_view> known;
    for (const JwtProviderConfig& provider : config.jwt_providers) {
      known.push_back(provider.name);
    }
    std::string message = "no JWT provider is named \"" + auth.provider + "\"";
    if (const auto suggestion = closest_word(auth.provider, known)) {
      message += " (did you mean \"" + std::string(*suggestion) + "\"?)";
    }
    reader.error("jwt", message + (known.empty() ? std::string("; none is defined (auth.jwt)")
                                                 : "; defined: " + join_words(known, "and")));
    return std::nullopt;
  }
  return auth;
}

}  // namespace sluice::config
