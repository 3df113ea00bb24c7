#include "config/addresses.hpp"

#include <boost/url/grammar/ci_string.hpp>
#include <charconv>

#include "config/url.hpp"

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

namespace {

namespace urls = boost::urls;

/// `text` begins with `scheme://`, the scheme in any case (RFC 3986 §3.1).
bool starts_with_scheme(std::string_view text, std::string_view scheme) {
  return text.size() >= scheme.size() + 3 &&
         urls::grammar::ci_is_equal(text.substr(0, scheme.size()), scheme) &&
         text.substr(scheme.size(), 3) == "://";
}

/// The address to connect to: a name percent-decoded, or an IP address without brackets; empty
/// when there is none usable.
std::string host_of(urls::url_view url) {
  return url.host_type() == urls::host_type::ipvfuture ? std::string() : url.host_address();
}

/// The URL's port, `fallback` when it names none; nullopt when it is empty, 0 or above 65535.
std::optional<std::uint16_t> port_of(urls::url_view url, std::uint16_t fallback) {
  if (!url.has_port()) {
    return fallback;
  }
  const std::string_view digits = url.port();
  unsigned number = 0;
  const auto [end, error] = std::from_chars(digits.data(), digits.data() + digits.size(), number);
  if (digits.empty() || error != std::errc{} || end != digits.data() + digits.size() ||
      number == 0 || number > 65535) {
    return std::nullopt;
  }
  return static_cast<std::uint16_t>(number);
}

constexpr std::string_view kPortRange = "has a port that is not a number from 1 to 65535";

/// `text` with every '@' of its authority but the last percent-encoded. A password written with
/// a raw '@' (often one taken from `${VAR}`) was read before URLs were parsed strictly, and
/// still is: the user and password end at the authority's last '@', as Redis clients read it.
/// A raw '/', '?' or '#' still ends the authority early, and is refused.
std::string with_userinfo_at_encoded(std::string_view text) {
  const std::size_t start = text.find("://") + 3;
  const std::size_t end = std::min(text.size(), text.find_first_of("/?#", start));
  const std::size_t last_at = text.substr(0, end).rfind('@');
  if (last_at == std::string_view::npos || last_at < start) {
    return std::string(text);
  }
  std::string encoded(text.substr(0, start));
  for (std::size_t i = start; i < last_at; ++i) {
    encoded += text[i] == '@' ? std::string_view("%40") : text.substr(i, 1);
  }
  encoded += text.substr(last_at);
  return encoded;
}

}  // namespace

std::optional<Upstream> parse_upstream(std::string_view text, std::string& problem) {
  const auto fail = [&](std::string_view why) -> std::optional<Upstream> {
    problem = "\"" + redact_url(text) + "\" " + std::string(why);
    return std::nullopt;
  };
  const bool h2 = starts_with_scheme(text, "h2");
  const bool h2c = starts_with_scheme(text, "h2c");
  const bool tls = h2 || starts_with_scheme(text, "https");
  if (!tls && !h2c && !starts_with_scheme(text, "http")) {
    return fail("is not an http://, https://, h2c:// or h2:// URL");
  }
  const std::optional<urls::url_view> url = parse_url(text);
  if (!url) {
    return fail("is not a valid URL (RFC 3986)");
  }
  if (url->has_userinfo()) {
    return fail("must be http[s]://host[:port], without a user or password");
  }
  std::string host = host_of(*url);
  if (host.empty()) {
    return fail("has no host");
  }
  const std::optional<std::uint16_t> port = port_of(*url, tls ? 443 : 80);
  if (!port) {
    return fail(kPortRange);
  }
  if (url->encoded_path().size() > 1) {
    return fail("must be http[s]://host[:port], without a path");
  }
  if (url->has_query() || url->has_fragment()) {
    return fail("must be http[s]://host[:port], without a query or fragment");
  }
  return Upstream{.url = std::string(text),
                  .host = std::move(host),
                  .port = *port,
                  .tls = tls,
                  .http2 = h2 || h2c};
}

std::optional<RedisEndpoint> parse_redis_url(std::string_view text, std::string& problem) {
  const auto fail = [&](std::string_view why) -> std::optional<RedisEndpoint> {
    problem = "\"" + redact_url(text) + "\" " + std::string(why) +
              " (redis://[[user]:password@]host[:port][/db])";
    return std::nullopt;
  };
  if (!starts_with_scheme(text, "redis")) {
    return fail("is not a redis:// URL");
  }
  // A password's raw '/', '?' or '#' either breaks the syntax or leaves an '@' after it.
  const std::string lenient = with_userinfo_at_encoded(text);
  const std::optional<urls::url_view> url = parse_url(lenient);
  if (!url || has_stray_at(*url)) {
    return fail(
        "is not a valid URL (RFC 3986); percent-encode / ? # % in the user and password as "
        "%2F %3F %23 %25");
  }
  RedisEndpoint endpoint;
  if (url->has_userinfo()) {
    if (!url->has_password()) {
      return fail("names a user without a password");
    }
    endpoint.user = url->user();
    endpoint.password = url->password();
  }
  endpoint.host = host_of(*url);
  if (endpoint.host.empty()) {
    return fail("has no host");
  }
  const std::optional<std::uint16_t> port = port_of(*url, 6379);
  if (!port) {
    return fail(kPortRange);
  }
  endpoint.port = *port;
  if (url->has_query() || url->has_fragment()) {
    return fail("has a query or fragment");
  }
  if (const std::string_view path = url->encoded_path(); path.size() > 1) {
    const std::string_view db = path.substr(1);
    unsigned value = 0;
    const auto [end, error] = std::from_chars(db.data(), db.data() + db.size(), value);
    if (error != std::errc() || end != db.data() + db.size() || value > 1'000'000) {
      return fail("has a database that is not a whole number");
    }
    endpoint.db = value;
  }
  return endpoint;
}

}  // namespace sluice::config
