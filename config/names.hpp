#pragma once

#include <string>
#include <string_view>

namespace sluice::config {

/// Limiter and route names go as they are into RateLimit headers (quoted strings), metrics
/// labels and text log lines: printable ASCII without '"' or '\' needs no escaping in any.
inline bool plain_name(std::string_view name) noexcept {
  if (name.empty()) {
    return false;
  }
  for (const char c : name) {
    if (c < ' ' || c > '~' || c == '"' || c == '\\') {
      return false;
    }
  }
  return true;
}

/// Why a name is refused, the name shown with its odd bytes as \xNN.
inline std::string plain_name_problem(std::string_view name) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string shown;
  for (const char c : name) {
    const auto byte = static_cast<unsigned char>(c);
    if (byte < ' ' || byte > '~' || c == '"' || c == '\\') {
      shown += "\\x";
      shown += kHex[byte >> 4];
      shown += kHex[byte & 0xf];
    } else {
      shown += c;
    }
  }
  return "the name \"" + shown +
         "\" is not plain: use printable ASCII without '\"' or '\\' (a name goes as it is into "
         "RateLimit headers, metrics labels and log lines)";
}

}  // namespace sluice::config
