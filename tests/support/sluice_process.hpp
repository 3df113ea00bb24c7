#pragma once

#include <sys/types.h>

#include <cstdio>
#include <filesystem>
#include <string>

#include "tests/support/temp_directory.hpp"

namespace sluice::test {

/// A port nothing listens on now (the kernel's pick for a socket closed at once): for an admin
/// address that a test wants free.
unsigned short free_port();

/// `sluice run -c FILE` as a child process. What it prints (standard output; standard error too
/// when asked) comes through a pipe, line by line, and is kept.
class SluiceProcess {
 public:
  enum class Streams { out, out_and_err };

  explicit SluiceProcess(const std::filesystem::path& config, Streams streams = Streams::out);
  SluiceProcess(const SluiceProcess&) = delete;
  SluiceProcess& operator=(const SluiceProcess&) = delete;
  SluiceProcess(SluiceProcess&&) = delete;
  SluiceProcess& operator=(SluiceProcess&&) = delete;
  ~SluiceProcess();  // SIGKILL, if it still runs

  /// The next line it prints ("" at the end of its output).
  std::string line();
  /// Reads up to "listening on HOST:PORT" and returns the port.
  unsigned short port();
  /// Everything it printed: the lines read so far and the rest, to the end of its output (so
  /// only once it has stopped or is stopping).
  std::string all_output();

  void signal(int number) const;
  /// Waits for it to exit; its exit status, or -1 if a signal ended it.
  int wait();

 private:
  pid_t pid_ = -1;
  std::FILE* output_ = nullptr;
  std::string read_;  ///< Every line read so far.
};

/// What a finished `sluice` command printed, and its exit status.
struct CommandResult {
  int status = -1;
  std::string out;
  std::string err;
};

/// Runs `sluice ARGUMENTS` to its end, with standard input from /dev/null unless the arguments
/// redirect it, in `working_directory` when one is given; its output goes through files in
/// `scratch`.
CommandResult run_sluice(const std::string& arguments, const TempDirectory& scratch,
                         const std::filesystem::path& working_directory = {});

}  // namespace sluice::test
