#pragma once

#include <sys/types.h>

#include <fstream>
#include <string>
#include <vector>

namespace sluice::test {

/// A program a test starts (a real peer: Python's HTTPS or gRPC server), killed with the test
/// (and with the test process, should it die first). Its standard output is read up to the end
/// of its first line, which it prints when it is ready.
class ChildProcess {
 public:
  explicit ChildProcess(std::vector<std::string> arguments);
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;
  ChildProcess(ChildProcess&&) = delete;
  ChildProcess& operator=(ChildProcess&&) = delete;
  ~ChildProcess();

  /// Its first line of output, without the newline; empty if it ended before writing one.
  const std::string& first_line() const noexcept { return first_line_; }

 private:
  pid_t pid_ = -1;
  std::string first_line_;
};

/// How many lines a helper process has written to the file `path` (one per request it served,
/// say); 0 before it has written any.
inline int lines_in(const std::string& path) {
  std::ifstream in(path);
  int lines = 0;
  for (std::string line; std::getline(in, line);) {
    ++lines;
  }
  return lines;
}

}  // namespace sluice::test
