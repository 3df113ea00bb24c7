#include "config/read_routes.hpp"

#include <algorithm>
#include <boost/regex.hpp>
#include <cctype>

#include "config/addresses.hpp"
#include "config/did_you_mean.hpp"
#include "config/names.hpp"
#include "config/read_auth.hpp"
#include "config/read_rls.hpp"
#include "config/route_overlap.hpp"
#include "limiter/decide.hpp"
#include "limiter/make_limiter.hpp"

namespace sluice::config {
namespace {

bool is_token(const std::string& text) {
  return !text.empty() && std::all_of(text.begin(), text.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) ||
           std::string_view("!#$%&'*+-.^_`|~").find(c) != std::string_view::npos;
  });
}

void read_path(MapReader& match, Route& route) {
  using Path = RouteMatch::Path;
  const std::pair<std::string_view, Path> kinds[] = {
      {"path", Path::exact}, {"path_prefix", Path::prefix}, {"path_regex", Path::regex}};
  int given = 0;
  for (const auto& [key, kind] : kinds) {
    const std::optional<std::string> path = match.text(key);
    if (!path) {
      continue;
    }
    if (++given > 1) {
      match.error(key, "only one of path, path_prefix and path_regex may be given");
      continue;
    }
    route.match.path_kind = kind;
    route.match.path = *path;
    if (kind == Path::regex) {
      // The same engine and syntax as the request pipeline's (Boost.Regex, Perl syntax).
      try {
        const boost::regex compiled(*path, boost::regex::perl);
      } catch (const boost::regex_error& error) {
        // Boost's message is its first sentence; the rest repeats the pattern.
        const std::string what = error.what();
        match.error(key, "\"" + *path + "\" is not a valid regular expression: " +
                             what.substr(0, what.find(".  ")) + " (at character " +
                             std::to_string(error.position()) + ")");
      }
    } else if (!path->starts_with('/')) {
      match.error(key, "\"" + *path + "\" must start with /");
    }
  }
}

void read_headers(MapReader& match, Route& route, ReadContext& context) {
  if (!match.has("headers")) {
    return;
  }
  const YAML::Node list = match.node("headers");
  if (!list.IsSequence()) {
    match.error("headers", "expected a list of {name, present, value}");
    return;
  }
  for (std::size_t i = 0; i < list.size(); ++i) {
    MapReader header(list[i], match.path("headers") + "[" + std::to_string(i) + "]",
                     {"name", "present", "value"}, context);
    HeaderCondition condition;
    if (header.require("name")) {
      condition.name = header.text("name").value_or("");
    }
    condition.value = header.text("value");
    condition.present = header.flag("present").value_or(true);
    if (!condition.present && condition.value) {
      header.error("value", "a header that must be absent cannot have a value");
    }
    route.match.headers.push_back(std::move(condition));
  }
}

void read_match(MapReader& reader, Route& route, ReadContext& context) {
  auto section =
      reader.section("match", {"path", "path_prefix", "path_regex", "methods", "host", "headers"});
  if (!section) {
    return;  // matches every request
  }
  MapReader& match = *section;
  read_path(match, route);
  if (auto methods = match.texts("methods")) {
    for (std::string& method : *methods) {
      std::transform(method.begin(), method.end(), method.begin(),
                     [](char c) { return static_cast<char>(std::toupper(c)); });
      if (!is_token(method)) {
        match.error("methods", "\"" + method + "\" is not an HTTP method");
      }
    }
    route.match.methods = std::move(*methods);
  }
  route.match.host = match.text("host");
  read_headers(match, route, context);
}

void read_limiter_names(MapReader& reader, Route& route, const ProxyConfig& config,
                        ReadContext& context) {
  std::vector<std::string_view> known;
  for (const LimiterConfig& limiter : config.limiters) {
    known.push_back(limiter.name);
  }
  const std::string path = reader.path("limiters");
  for (const auto& [name, where] : reader.located_texts("limiters")) {
    if (std::find(route.limiters.begin(), route.limiters.end(), name) != route.limiters.end()) {
      context.diagnostics.error(where, path + ": \"" + name + "\" is named twice");
    } else if (!config.limiter_named(name)) {
      std::string message = path + ": no limiter is named \"" + name + "\"";
      if (const auto suggestion = closest_word(name, known)) {
        message += " (did you mean \"" + std::string(*suggestion) + "\"?)";
      }
      context.diagnostics.error(
          where, message + (known.empty() ? std::string("; none is defined")
                                          : "; defined: " + join_words(known, "and")));
    } else {
      route.limiters.push_back(name);
    }
  }
  if (route.limiters.size() > limiter::kMaxChargesPerRequest) {
    reader.error("limiters", "at most " + std::to_string(limiter::kMaxChargesPerRequest) +
                                 " limiters per route");
  }
}

/// Every limiter of the route must be able to admit its cost, for every key: with its own
/// parameters and with each override's (a key whose override admits less would be refused always).
void check_cost(MapReader& reader, const Route& route, const ProxyConfig& config) {
  const auto check = [&](const limiter::LimiterOptions& options, const std::string& whose) {
    const limiter::Permits largest = limiter::make_limiter(options)->max_cost();
    if (route.cost > largest) {
      reader.error(reader.has("cost") ? "cost" : "limiters",
                   "cost " + std::to_string(route.cost) + " is more than " + whose +
                       " can ever admit (at most " + std::to_string(largest) + ")");
    }
  };
  for (const std::string& name : route.limiters) {
    const LimiterConfig& limiter = *config.limiter_named(name);
    if (!limiter.valid) {
      continue;  // its own problems are reported with it
    }
    check(limiter.options, "limiter \"" + name + "\"");
    for (const Override& override : limiter.overrides) {
      check(override.options, "limiter \"" + name + "\" for key \"" + override.value + "\"");
    }
    for (const Override& tier : limiter.tiers) {
      check(tier.options, "limiter \"" + name + "\" for tier \"" + tier.value + "\"");
    }
  }
}

/// A limiter keyed on a claim needs a verified token: on a route without `auth` it would never
/// apply.
void check_claim_keys(MapReader& reader, const Route& route, const ProxyConfig& config) {
  if (route.auth || reader.has("auth")) {
    return;
  }
  for (const std::string& name : route.limiters) {
    const LimiterConfig* limiter = config.limiter_named(name);
    const KeySpec* claims = limiter == nullptr                               ? nullptr
                            : limiter->key.reads_claims()                    ? &limiter->key
                            : limiter->tier && limiter->tier->reads_claims() ? &*limiter->tier
                                                                             : nullptr;
    if (claims != nullptr) {
      reader.error("limiters", "limiter \"" + name + "\" is keyed on \"" + claims->text +
                                   "\", a verified token's claim, but the route has no "
                                   "auth (auth: {jwt: PROVIDER})");
    }
  }
}

/// `cost_from`: one source (usage, header, json or bytes) and its options.
std::optional<CostFrom> read_cost_from(MapReader& reader) {
  const bool given = reader.has("cost_from");
  auto section = reader.section(
      "cost_from", {"usage", "header", "json", "bytes", "count", "estimate", "include_usage"});
  if (!section) {
    return std::nullopt;
  }
  MapReader& from = *section;
  CostFrom cost;
  std::vector<std::string_view> sources;
  for (const std::string_view source : {"usage", "header", "json", "bytes"}) {
    if (from.has(source)) {
      sources.push_back(source);
    }
  }
  if (sources.empty()) {
    if (given) {
      reader.error("cost_from", "give one of usage, header, json or bytes: where the cost is read");
    }
    return std::nullopt;
  }
  if (sources.size() > 1) {
    from.error(sources[1], "give only one of usage, header, json or bytes");
  }
  if (from.has("usage")) {
    cost.source = CostFrom::Source::usage;
    if (auto usage = from.choice<CostFrom::Usage>(
            "usage",
            {{"openai", CostFrom::Usage::openai}, {"anthropic", CostFrom::Usage::anthropic}})) {
      cost.usage = *usage;
    }
  } else if (auto header = from.text("header")) {
    cost.source = CostFrom::Source::header;
    cost.field = *header;
    if (!is_token(cost.field)) {
      from.error("header", "\"" + cost.field + "\" is not a header name");
    }
  } else if (auto path = from.text("json")) {
    cost.source = CostFrom::Source::json;
    cost.field = *path;
    if (cost.field.empty() || cost.field.front() == '.' || cost.field.back() == '.' ||
        cost.field.find("..") != std::string::npos) {
      from.error("json", "\"" + cost.field + "\" is not a dotted path (usage.total_tokens)");
    }
  } else if (from.has("bytes")) {
    cost.source = CostFrom::Source::bytes;
    from.choice<bool>("bytes", {{"response", true}});
  }
  if (auto count = from.choice<CostFrom::Count>("count", {{"total", CostFrom::Count::total},
                                                          {"input", CostFrom::Count::input},
                                                          {"output", CostFrom::Count::output}})) {
    cost.count = *count;
    if (cost.source != CostFrom::Source::usage) {
      from.error("count", "applies with usage only (which of its tokens count)");
    }
  }
  if (auto estimate = from.whole_number("estimate", 0, 4'294'967'295)) {
    cost.estimate = static_cast<limiter::Permits>(*estimate);
  }
  if (auto include_usage = from.flag("include_usage")) {
    cost.include_usage = *include_usage;
    if (cost.include_usage &&
        (cost.source != CostFrom::Source::usage || cost.usage != CostFrom::Usage::openai)) {
      from.error("include_usage", "applies with usage: openai only");
    }
  }
  return cost;
}

/// A limiter charged from the response needs the route to say where the cost is, and to let
/// its estimate through.
void check_cost_from(MapReader& reader, const Route& route, const ProxyConfig& config) {
  if (route.cost_from && reader.has("respond")) {
    reader.error("cost_from",
                 "a route that answers itself (respond) has no upstream response "
                 "to read a cost from");
  }
  const auto settled_later = std::count_if(
      route.limiters.begin(), route.limiters.end(),
      [&](const std::string& name) { return config.limiter_named(name)->settled_later(); });
  if (static_cast<std::size_t>(settled_later) > limiter::kMaxChargesSettledLater) {
    reader.error("limiters", "at most " + std::to_string(limiter::kMaxChargesSettledLater) +
                                 " limiters per route charged after the response (cost: "
                                 "response, count_if)");
  }
  for (const std::string& name : route.limiters) {
    const LimiterConfig& limiter = *config.limiter_named(name);
    if (!limiter.valid || !limiter.cost_from_response) {
      continue;
    }
    if (!route.cost_from && !reader.has("cost_from")) {
      reader.error("limiters", "limiter \"" + name +
                                   "\" is charged what the response cost (cost: response), but "
                                   "the route has no cost_from");
      continue;
    }
    const limiter::Permits largest = limiter::make_limiter(limiter.options)->max_cost();
    if (route.cost_from && route.cost_from->estimate > largest) {
      reader.error("cost_from", "estimate " + std::to_string(route.cost_from->estimate) +
                                    " is more than limiter \"" + name +
                                    "\" can ever admit (at most " + std::to_string(largest) + ")");
    }
  }
}

/// Forward auth on the decide port (SPEC §11) decides a request and never sees it end.
void check_decide(MapReader& reader, const Route& route, const ProxyConfig& config) {
  if (!config.decide) {
    return;
  }
  for (const std::string& name : route.limiters) {
    if (const std::string problem = needs_end_of_request(*config.limiter_named(name));
        !problem.empty()) {
      reader.error("limiters", "forward auth on the decide port has no end of request: " + problem);
    }
  }
}

Route read_route(const YAML::Node& node, std::size_t index, const ProxyConfig& config,
                 bool upstream_given, ReadContext& context) {
  const std::string path = "routes[" + std::to_string(index) + "]";
  MapReader reader(
      node, path, {"name", "match", "upstream", "limiters", "cost", "respond", "auth", "cost_from"},
      context);
  Route route;
  route.name = "route-" + std::to_string(index + 1);
  route.at = reader.at();
  if (!reader.valid() && !node.IsNull()) {
    return route;  // not a mapping: reported; an empty value reads as an empty mapping
  }
  if (auto name = reader.text("name")) {
    route.name = *name;
    if (!plain_name(route.name)) {
      reader.error("name", plain_name_problem(route.name));
    }
  }
  read_match(reader, route, context);
  if (auto upstream = reader.text("upstream")) {
    std::string problem;
    route.upstream = parse_upstream(*upstream, problem);
    if (!route.upstream) {
      reader.error("upstream", problem);
    }
  }
  read_limiter_names(reader, route, config, context);
  route.auth = read_route_auth(reader, config);
  check_claim_keys(reader, route, config);
  if (auto cost = reader.whole_number("cost", 1, 4'294'967'295)) {
    route.cost = static_cast<limiter::Permits>(*cost);
  }
  check_cost(reader, route, config);
  route.cost_from = read_cost_from(reader);
  check_cost_from(reader, route, config);
  check_decide(reader, route, config);
  if (auto section = reader.section("respond", {"status", "body"})) {
    MapReader& respond = *section;
    // A final status: an interim one (1xx) would leave the client waiting for the real answer.
    route.respond = Respond{
        .status = static_cast<unsigned>(respond.whole_number("status", 200, 599).value_or(200)),
        .body = respond.text("body").value_or("")};
    if ((route.respond->status == 204 || route.respond->status == 304) &&
        !route.respond->body.empty()) {
      respond.error("body", "a 204 or 304 answer has no body (RFC 9110 §15.3.5, §15.4.5)");
    }
    if (reader.has("upstream")) {
      reader.error("respond", "a route answers itself (respond) or forwards (upstream), not both");
    }
  } else if (!reader.has("upstream") && !upstream_given) {
    context.diagnostics.error(reader.at(),
                              path + ": no upstream; give one here or at the top level");
  }
  return route;
}

}  // namespace

std::vector<Route> read_routes(const YAML::Node& node, const ProxyConfig& config,
                               bool upstream_given, ReadContext& context) {
  std::vector<Route> routes;
  if (!node.IsSequence()) {
    context.diagnostics.error(location_of(node), "routes: expected a list of routes");
    return routes;
  }
  for (std::size_t i = 0; i < node.size(); ++i) {
    Route route = read_route(node[i], i, config, upstream_given, context);
    for (std::size_t earlier = 0; earlier < routes.size(); ++earlier) {
      if (routes[earlier].name == route.name) {
        context.diagnostics.error(route.at, "routes[" + std::to_string(i) + "]: the name \"" +
                                                route.name + "\" is taken by routes[" +
                                                std::to_string(earlier) + "]");
      }
      if (covers(routes[earlier].match, route.match)) {
        context.diagnostics.error(
            route.at, "routes[" + std::to_string(i) + "] (\"" + route.name +
                          "\") can never match: routes[" + std::to_string(earlier) + "] (\"" +
                          routes[earlier].name + "\") before it matches every request it would");
        break;
      }
    }
    routes.push_back(std::move(route));
  }
  return routes;
}

}  // namespace sluice::config
