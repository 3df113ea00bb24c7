#pragma once

#include <stdexcept>
#include <string>
#include <vector>

namespace sluice::config {

/// A place in the config file, 1-based; 0 when unknown.
struct Location {
  int line = 0;
  int column = 0;

  bool operator==(const Location&) const = default;
};

struct Diagnostic {
  Location at;
  std::string message;
};

/// A config that cannot be used, with every problem found in it (not just the first).
class ConfigError : public std::runtime_error {
 public:
  ConfigError(std::string file, std::vector<Diagnostic> diagnostics);

  const std::string& file() const noexcept { return file_; }
  const std::vector<Diagnostic>& diagnostics() const noexcept { return diagnostics_; }
  /// One "FILE:LINE:COL: message" line per problem, in file order.
  std::vector<std::string> lines() const;

 private:
  std::string file_;
  std::vector<Diagnostic> diagnostics_;
};

/// Collects problems while a config is read, so that all of them are reported at once.
class Diagnostics {
 public:
  explicit Diagnostics(std::string file) : file_(std::move(file)) {}

  void error(Location at, std::string message) { list_.push_back({at, std::move(message)}); }
  bool empty() const noexcept { return list_.empty(); }
  /// Problems so far: a reader compares counts to know whether its part read cleanly.
  std::size_t count() const noexcept { return list_.size(); }
  const std::string& file() const noexcept { return file_; }
  /// Throws ConfigError if any problem was recorded.
  void throw_if_any() const;

 private:
  std::string file_;
  std::vector<Diagnostic> list_;
};

}  // namespace sluice::config
