#pragma once

#include <boost/regex.hpp>
#include <optional>
#include <vector>

#include "config/proxy_config.hpp"
#include "proxy/pipeline/request_view.hpp"

namespace sluice::pipeline {

/// The routes of a config, compiled once (regexes included). First match wins. Read-only once
/// built: thread-safe.
class RouteTable {
 public:
  explicit RouteTable(const std::vector<config::Route>& routes);

  /// Index of the first route that matches `request`; nullopt when none does (404).
  std::optional<std::size_t> match(const RequestView& request) const;

 private:
  struct Compiled {
    const config::Route* route;
    std::optional<boost::regex> regex;
  };
  bool matches(const Compiled& compiled, const RequestView& request) const;

  std::vector<Compiled> routes_;
};

}  // namespace sluice::pipeline
