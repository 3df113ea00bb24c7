#include "config/route_overlap.hpp"

#include <strings.h>

#include <algorithm>

namespace sluice::config {
namespace {

bool same_text_ignoring_case(const std::string& a, const std::string& b) {
  return a.size() == b.size() && strncasecmp(a.data(), b.data(), a.size()) == 0;
}

bool path_covers(const RouteMatch& earlier, const RouteMatch& later) {
  using Path = RouteMatch::Path;
  switch (earlier.path_kind) {
    case Path::any:
      return true;
    case Path::exact:
      return later.path_kind == Path::exact && later.path == earlier.path;
    case Path::prefix:
      return (later.path_kind == Path::exact || later.path_kind == Path::prefix) &&
             later.path.starts_with(earlier.path);
    case Path::regex:
      return later.path_kind == Path::regex && later.path == earlier.path;
  }
  return false;
}

bool methods_cover(const RouteMatch& earlier, const RouteMatch& later) {
  if (earlier.methods.empty()) {
    return true;
  }
  if (later.methods.empty()) {
    return false;
  }
  return std::all_of(later.methods.begin(), later.methods.end(), [&](const std::string& method) {
    return std::find(earlier.methods.begin(), earlier.methods.end(), method) !=
           earlier.methods.end();
  });
}

bool host_covers(const RouteMatch& earlier, const RouteMatch& later) {
  return !earlier.host || (later.host && same_text_ignoring_case(*earlier.host, *later.host));
}

/// Every condition of `earlier` is implied by one of `later`'s.
bool headers_cover(const RouteMatch& earlier, const RouteMatch& later) {
  return std::all_of(
      earlier.headers.begin(), earlier.headers.end(), [&](const HeaderCondition& condition) {
        return std::any_of(later.headers.begin(), later.headers.end(),
                           [&](const HeaderCondition& implied) {
                             if (!same_text_ignoring_case(condition.name, implied.name) ||
                                 condition.present != implied.present) {
                               return false;
                             }
                             return !condition.value || condition.value == implied.value;
                           });
      });
}

}  // namespace

bool covers(const RouteMatch& earlier, const RouteMatch& later) {
  return path_covers(earlier, later) && methods_cover(earlier, later) &&
         host_covers(earlier, later) && headers_cover(earlier, later);
}

}  // namespace sluice::config
