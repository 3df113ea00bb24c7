#include "config/url.hpp"

#include <algorithm>
#include <boost/url/parse.hpp>

namespace sluice::config {
namespace {

namespace urls = boost::urls;

constexpr std::string_view kHidden = "***";

bool is_digit(char c) { return c >= '0' && c <= '9'; }

/// RFC 3986: ALPHA *( ALPHA / DIGIT / "+" / "-" / "." ).
bool is_scheme(std::string_view text) {
  const auto is_alpha = [](char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); };
  return !text.empty() && is_alpha(text.front()) && std::ranges::all_of(text, [&](char c) {
    return is_alpha(c) || is_digit(c) || c == '+' || c == '-' || c == '.';
  });
}

/// What is shown of a URL whose password's end cannot be known: the scheme, `***@` when it has
/// an '@', then the host after the last '@' and its port if that is a number. Whatever the
/// password holds, it ends before the last '@', so nothing of it is shown.
std::string scheme_and_host(std::string_view text) {
  std::string shown;
  std::string_view rest = text;
  if (const std::size_t separator = text.find("://");
      separator != std::string_view::npos && is_scheme(text.substr(0, separator))) {
    shown = text.substr(0, separator + 3);
    rest = text.substr(separator + 3);
  }
  if (const std::size_t at = rest.rfind('@'); at != std::string_view::npos) {
    shown += kHidden;
    shown += '@';
    rest = rest.substr(at + 1);
  }
  rest = rest.substr(0, rest.find_first_of("/?#"));
  std::size_t host_end = std::min(rest.find(':'), rest.size());
  if (rest.starts_with('[')) {  // an IPv6 address, with colons of its own
    const std::size_t close = rest.find(']');
    host_end = close == std::string_view::npos ? 0 : close + 1;
  }
  shown += rest.substr(0, host_end);
  const std::string_view port = rest.substr(host_end);
  if (port.size() > 1 && port.front() == ':' && std::ranges::all_of(port.substr(1), is_digit)) {
    shown += port;
  }
  return shown;
}

}  // namespace

std::optional<urls::url_view> parse_url(std::string_view text) {
  const urls::result<urls::url_view> parsed = urls::parse_uri(text);
  if (!parsed) {
    return std::nullopt;
  }
  const std::string_view path = parsed->encoded_path();
  if (parsed->has_authority() && !path.empty() && !path.starts_with('/')) {
    return std::nullopt;
  }
  return *parsed;
}

bool has_stray_at(urls::url_view url) {
  // A userinfo cannot hold a raw '@', nor can a scheme, host or port: the only '@' allowed is
  // the one that ends the userinfo.
  const auto ats =
      static_cast<std::size_t>(std::ranges::count(std::string_view(url.buffer()), '@'));
  return ats > (url.has_userinfo() ? 1U : 0U);
}

std::string redact_url(std::string_view text) {
  const std::optional<urls::url_view> url = parse_url(text);
  if (!url || has_stray_at(*url)) {
    return scheme_and_host(text);
  }
  std::string shown(url->scheme());
  shown += ':';
  if (url->has_authority()) {
    shown += "//";
    if (url->has_password()) {
      shown += url->encoded_user();
      shown += ':';
      shown += kHidden;
      shown += '@';
    } else if (url->has_userinfo()) {
      shown += kHidden;
      shown += '@';
    }
    shown += url->encoded_host_and_port();
  }
  shown += url->encoded_path();
  if (url->has_query()) {
    shown += '?';
    shown += kHidden;
  }
  if (url->has_fragment()) {
    shown += '#';
    shown += kHidden;
  }
  return shown;
}

}  // namespace sluice::config
