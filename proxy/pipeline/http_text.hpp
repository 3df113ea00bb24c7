#pragma once

#include <strings.h>

#include <string_view>

namespace sluice::pipeline {

/// `text` without leading and trailing spaces and tabs (HTTP's optional whitespace).
inline std::string_view trim_whitespace(std::string_view text) noexcept {
  while (!text.empty() && (text.front() == ' ' || text.front() == '\t')) {
    text.remove_prefix(1);
  }
  while (!text.empty() && (text.back() == ' ' || text.back() == '\t')) {
    text.remove_suffix(1);
  }
  return text;
}

/// ASCII case-insensitive equality, as HTTP compares header names and hosts.
inline bool equal_ignoring_case(std::string_view a, std::string_view b) noexcept {
  return a.size() == b.size() && strncasecmp(a.data(), b.data(), a.size()) == 0;
}

}  // namespace sluice::pipeline
