#include "config/addresses.hpp"

#include <charconv>

namespace sluice::config {

std::optional<HostPort> parse_host_port(std::string_view text) {
  std::string_view host;
  std::string_view port;
  if (text.starts_with('[')) {
    const std::size_t close = text.find(']');
    if (close == std::string_view::npos || text.substr(close + 1, 1) != ":") {
      return std::nullopt;
    }
    host = text.substr(1, close - 1);
    port = text.substr(close + 2);
  } else {
    const std::size_t colon = text.rfind(':');
    if (colon == std::string_view::npos || text.find(':') != colon) {
      return std::nullopt;  // no port, or an IPv6 address without brackets
    }
    host = text.substr(0, colon);
    port = text.substr(colon + 1);
  }
  unsigned number = 0;
  const auto [end, error] = std::from_chars(port.data(), port.data() + port.size(), number);
  if (port.empty() || error != std::errc{} || end != port.data() + port.size() || number > 65535) {
    return std::nullopt;
  }
  return HostPort{.host = host.empty() ? "0.0.0.0" : std::string(host),
                  .port = static_cast<std::uint16_t>(number)};
}

std::optional<Upstream> parse_upstream(std::string_view text, std::string& problem) {
  constexpr std::string_view kScheme = "http://";
  if (!text.starts_with(kScheme)) {
    problem = "\"" + std::string(text) + "\" is not an http:// URL (upstreams speak plain HTTP)";
    return std::nullopt;
  }
  std::string_view authority = text.substr(kScheme.size());
  if (authority.ends_with('/')) {
    authority.remove_suffix(1);
  }
  if (authority.empty() || authority.find('/') != std::string_view::npos) {
    problem = "\"" + std::string(text) + "\" must be http://host[:port], without a path";
    return std::nullopt;
  }
  const bool has_port = authority.starts_with('[') ? authority.find("]:") != std::string_view::npos
                                                   : authority.find(':') != std::string_view::npos;
  std::optional<HostPort> address =
      parse_host_port(has_port ? authority : std::string(authority) + ":80");
  if (!address || address->host.empty() || address->port == 0) {
    problem = "\"" + std::string(text) + "\" has no valid host and port";
    return std::nullopt;
  }
  return Upstream{.url = std::string(text), .host = address->host, .port = address->port};
}

std::optional<RedisEndpoint> parse_redis_url(std::string_view text, std::string& problem) {
  constexpr std::string_view kScheme = "redis://";
  const auto fail = [&](std::string_view why) -> std::optional<RedisEndpoint> {
    problem = "\"" + std::string(text) + "\" " + std::string(why) +
              " (redis://[[user]:password@]host[:port][/db])";
    return std::nullopt;
  };
  if (!text.starts_with(kScheme)) {
    return fail("is not a redis:// URL");
  }
  std::string_view rest = text.substr(kScheme.size());
  RedisEndpoint endpoint;
  if (const std::size_t at = rest.rfind('@'); at != std::string_view::npos) {
    const std::string_view credentials = rest.substr(0, at);
    const std::size_t colon = credentials.find(':');
    if (colon == std::string_view::npos) {
      return fail("names a user without a password");
    }
    endpoint.user = std::string(credentials.substr(0, colon));
    endpoint.password = std::string(credentials.substr(colon + 1));
    rest = rest.substr(at + 1);
  }
  std::string_view authority = rest;
  if (const std::size_t slash = rest.find('/'); slash != std::string_view::npos) {
    authority = rest.substr(0, slash);
    const std::string_view db = rest.substr(slash + 1);
    if (!db.empty()) {
      unsigned value = 0;
      const auto [end, error] = std::from_chars(db.data(), db.data() + db.size(), value);
      if (error != std::errc() || end != db.data() + db.size() || value > 1'000'000) {
        return fail("has a database that is not a whole number");
      }
      endpoint.db = value;
    }
  }
  const bool has_port = authority.starts_with('[') ? authority.find("]:") != std::string_view::npos
                                                   : authority.find(':') != std::string_view::npos;
  const std::optional<HostPort> address =
      parse_host_port(has_port ? std::string(authority) : std::string(authority) + ":6379");
  if (authority.empty() || authority.starts_with(':') || !address || address->host.empty() ||
      address->port == 0) {
    return fail("has no valid host and port");
  }
  endpoint.host = address->host;
  endpoint.port = address->port;
  return endpoint;
}

}  // namespace sluice::config
