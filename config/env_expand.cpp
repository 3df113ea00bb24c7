#include "config/env_expand.hpp"

#include <cstdlib>

namespace sluice::config {

std::optional<std::string> process_environment(std::string_view name) {
  const std::string key(name);
  if (const char* value = std::getenv(key.c_str())) {
    return std::string(value);
  }
  return std::nullopt;
}

std::optional<std::string> expand_environment(std::string_view text, const Environment& environment,
                                              std::string& error) {
  std::string out;
  out.reserve(text.size());
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] != '$' || i + 1 == text.size()) {
      out += text[i];
      continue;
    }
    if (text[i + 1] == '$') {
      out += '$';
      ++i;
      continue;
    }
    if (text[i + 1] != '{') {
      out += text[i];
      continue;
    }
    const std::size_t close = text.find('}', i + 2);
    if (close == std::string_view::npos) {
      error = "unterminated ${ in \"" + std::string(text) + "\"";
      return std::nullopt;
    }
    const std::string_view inside = text.substr(i + 2, close - i - 2);
    const std::size_t fallback_at = inside.find(":-");
    const std::string_view name = inside.substr(0, fallback_at);
    if (name.empty()) {
      error = "empty variable name in \"" + std::string(text) + "\"";
      return std::nullopt;
    }
    if (std::optional<std::string> value = environment(name); value && !value->empty()) {
      out += *value;
    } else if (fallback_at != std::string_view::npos) {
      out += inside.substr(fallback_at + 2);
    } else if (value) {
      out += *value;  // set but empty, no default: empty, as a shell would
    } else {
      error = "environment variable " + std::string(name) + " is not set (give a default with ${" +
              std::string(name) + ":-value})";
      return std::nullopt;
    }
    i = close;
  }
  return out;
}

}  // namespace sluice::config
