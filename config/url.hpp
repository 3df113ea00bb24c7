#pragma once

#include <boost/url/url_view.hpp>
#include <optional>
#include <string>
#include <string_view>

namespace sluice::config {

/// `text` as an RFC 3986 URI, or nullopt. The view points into `text`. Stricter than
/// boost::urls::parse_uri in one place: after an authority a path must begin with '/' (Boost
/// 1.81 takes `redis://:secret` for an empty host and port followed by the path `secret`).
std::optional<boost::urls::url_view> parse_url(std::string_view text);

/// True when `url` has an '@' after its authority, which is how a password written with a raw
/// '@', '/', '?' or '#' parses: its end has spilled into the host, path, query or fragment.
bool has_stray_at(boost::urls::url_view url);

/// A URL as it may be shown (logs, errors, /config, `sluice check`): the password and a lone
/// user (often a token) become `***`, and so do a query and a fragment, which may carry one.
/// `redis://user:secret@host:6379/0` → `redis://user:***@host:6379/0`,
/// `redis://token@host` → `redis://***@host`. A URL that does not parse cleanly (see
/// has_stray_at) is shown as its scheme, `***@` if it had an '@', and the host after the last
/// '@' with a numeric port: no password can reach past its last '@'. Never throws on bad input.
std::string redact_url(std::string_view url);

}  // namespace sluice::config
