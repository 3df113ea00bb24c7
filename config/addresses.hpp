#pragma once

#include <optional>
#include <string_view>

#include "config/proxy_config.hpp"

namespace sluice::config {

/// `host:port`, `[v6]:port` or `:port` (all addresses); port 0 lets the system choose.
std::optional<HostPort> parse_host_port(std::string_view text);

/// `http://host[:port][/]` or `https://…` (RFC 3986; port 80 or 443 by default); nullopt with a
/// message for anything else. The message shows the URL redacted.
std::optional<Upstream> parse_upstream(std::string_view text, std::string& problem);

/// `redis://[[user]:password@]host[:port][/db]` (RFC 3986; port 6379 and db 0 by default), the
/// user and password percent-decoded; nullopt with a message for anything else. The message
/// shows the URL redacted.
std::optional<RedisEndpoint> parse_redis_url(std::string_view text, std::string& problem);

}  // namespace sluice::config
