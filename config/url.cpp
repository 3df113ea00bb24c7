#include "config/url.hpp"

namespace sluice::config {

std::string redact_url(std::string_view url) {
  const std::size_t scheme = url.find("://");
  const std::size_t authority = scheme == std::string_view::npos ? 0 : scheme + 3;
  const std::size_t at = url.find('@', authority);
  const std::size_t slash = url.find('/', authority);
  if (at == std::string_view::npos || (slash != std::string_view::npos && slash < at)) {
    return std::string(url);
  }
  const std::size_t colon = url.find(':', authority);
  const std::size_t secret = colon != std::string_view::npos && colon < at ? colon + 1 : authority;
  return std::string(url.substr(0, secret)) + "***" + std::string(url.substr(at));
}

}  // namespace sluice::config
