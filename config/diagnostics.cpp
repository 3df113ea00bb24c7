#include "config/diagnostics.hpp"

#include <algorithm>

namespace sluice::config {
namespace {

std::string summary(const std::string& file, const std::vector<Diagnostic>& diagnostics) {
  return file + ": " + std::to_string(diagnostics.size()) +
         (diagnostics.size() == 1 ? " error" : " errors");
}

}  // namespace

ConfigError::ConfigError(std::string file, std::vector<Diagnostic> diagnostics)
    : std::runtime_error(summary(file, diagnostics)),
      file_(std::move(file)),
      diagnostics_(std::move(diagnostics)) {
  std::stable_sort(
      diagnostics_.begin(), diagnostics_.end(), [](const Diagnostic& a, const Diagnostic& b) {
        return a.at.line != b.at.line ? a.at.line < b.at.line : a.at.column < b.at.column;
      });
}

std::vector<std::string> ConfigError::lines() const {
  std::vector<std::string> lines;
  lines.reserve(diagnostics_.size());
  for (const Diagnostic& d : diagnostics_) {
    lines.push_back(file_ + ":" + std::to_string(d.at.line) + ":" + std::to_string(d.at.column) +
                    ": " + d.message);
  }
  return lines;
}

void Diagnostics::throw_if_any() const {
  if (!list_.empty()) {
    throw ConfigError(file_, list_);
  }
}

}  // namespace sluice::config
