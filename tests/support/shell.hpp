#pragma once

#include <array>
#include <cstdio>
#include <stdexcept>
#include <string>

namespace sluice::test {

/// What a shell command (a real client such as redis-cli) writes to its standard output.
inline std::string output_of(const std::string& command) {
  FILE* pipe = ::popen(command.c_str(), "r");
  if (pipe == nullptr) {
    throw std::runtime_error("cannot run: " + command);
  }
  std::string out;
  std::array<char, 4096> buffer;
  while (const std::size_t read = std::fread(buffer.data(), 1, buffer.size(), pipe)) {
    out.append(buffer.data(), read);
  }
  ::pclose(pipe);
  return out;
}

}  // namespace sluice::test
