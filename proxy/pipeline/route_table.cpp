#include "proxy/pipeline/route_table.hpp"

#include <algorithm>

#include "proxy/pipeline/http_text.hpp"

namespace sluice::pipeline {
namespace {

/// The Host header without its port ("api.example.com:8080" → "api.example.com").
std::string_view host_name(std::string_view host) {
  if (host.starts_with('[')) {
    return host.substr(0, host.find(']') + 1);
  }
  return host.substr(0, host.find(':'));
}

}  // namespace

RouteTable::RouteTable(const std::vector<config::Route>& routes) {
  routes_.reserve(routes.size());
  for (const config::Route& route : routes) {
    Compiled compiled{&route, std::nullopt};
    if (route.match.path_kind == config::RouteMatch::Path::regex) {
      compiled.regex.emplace(route.match.path, boost::regex::perl | boost::regex::optimize);
    }
    routes_.push_back(std::move(compiled));
  }
}

bool RouteTable::matches(const Compiled& compiled, const RequestView& request) const {
  const config::RouteMatch& match = compiled.route->match;
  const std::string_view path = request.path();
  using Path = config::RouteMatch::Path;
  switch (match.path_kind) {
    case Path::any:
      break;
    case Path::exact:
      if (path != match.path) {
        return false;
      }
      break;
    case Path::prefix:
      if (!path.starts_with(match.path)) {
        return false;
      }
      break;
    case Path::regex: {
      // A search without match results builds (allocates) a temporary set per call; one reused
      // per thread keeps matching allocation-free.
      thread_local boost::match_results<std::string_view::const_iterator> found;
      if (!boost::regex_search(path.begin(), path.end(), found, *compiled.regex)) {
        return false;
      }
      break;
    }
  }
  if (!match.methods.empty() && std::find(match.methods.begin(), match.methods.end(),
                                          request.method) == match.methods.end()) {
    return false;
  }
  if (match.host && !equal_ignoring_case(host_name(request.host), *match.host)) {
    return false;
  }
  return std::all_of(
      match.headers.begin(), match.headers.end(), [&](const config::HeaderCondition& condition) {
        const Header* header = request.find_header(condition.name);
        if (!condition.present) {
          return header == nullptr;
        }
        return header != nullptr && (!condition.value || header->value == *condition.value);
      });
}

std::optional<std::size_t> RouteTable::match(const RequestView& request) const {
  for (std::size_t i = 0; i < routes_.size(); ++i) {
    if (matches(routes_[i], request)) {
      return i;
    }
  }
  return std::nullopt;
}

}  // namespace sluice::pipeline
