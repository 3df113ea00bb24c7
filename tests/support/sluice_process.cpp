#include "tests/support/sluice_process.hpp"

#include <gtest/gtest.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <cstdlib>
#include <fstream>
#include <sstream>

extern char** environ;  // NOLINT: posix_spawn passes the test's environment on

namespace sluice::test {
namespace {

std::string read_file(const std::filesystem::path& path) {
  std::ifstream in(path);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

}  // namespace

unsigned short free_port() {
  boost::asio::io_context io;
  boost::asio::ip::tcp::acceptor probe(
      io, boost::asio::ip::tcp::endpoint(boost::asio::ip::make_address("127.0.0.1"), 0));
  return probe.local_endpoint().port();
}

SluiceProcess::SluiceProcess(const std::filesystem::path& config, Streams streams) {
  int pipe_ends[2];
  EXPECT_EQ(::pipe(pipe_ends), 0);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, pipe_ends[1], STDOUT_FILENO);
  if (streams == Streams::out_and_err) {
    posix_spawn_file_actions_adddup2(&actions, pipe_ends[1], STDERR_FILENO);
  }
  posix_spawn_file_actions_addclose(&actions, pipe_ends[0]);
  const std::string binary = SLUICE_BINARY;
  const std::string config_text = config.string();
  std::string run = "run";
  std::string flag = "-c";
  char* argv[] = {const_cast<char*>(binary.c_str()), run.data(), flag.data(),  // NOLINT
                  const_cast<char*>(config_text.c_str()), nullptr};            // NOLINT
  EXPECT_EQ(::posix_spawn(&pid_, binary.c_str(), &actions, nullptr, argv, environ), 0);
  posix_spawn_file_actions_destroy(&actions);
  ::close(pipe_ends[1]);
  output_ = ::fdopen(pipe_ends[0], "r");
}

SluiceProcess::~SluiceProcess() {
  if (pid_ > 0) {
    ::kill(pid_, SIGKILL);
    ::waitpid(pid_, nullptr, 0);
  }
  if (output_ != nullptr) {
    std::fclose(output_);
  }
}

std::string SluiceProcess::line() {
  std::array<char, 512> text{};
  if (std::fgets(text.data(), static_cast<int>(text.size()), output_) == nullptr) {
    return {};
  }
  read_ += text.data();
  return text.data();
}

unsigned short SluiceProcess::port() {
  for (std::string next = line(); !next.empty(); next = line()) {
    const std::size_t listening = next.find("listening on");
    if (listening == std::string::npos) {
      continue;  // a log line before it
    }
    const std::size_t colon = next.find(':', listening);
    EXPECT_NE(colon, std::string::npos) << next;
    return static_cast<unsigned short>(std::stoi(next.substr(colon + 1)));
  }
  ADD_FAILURE() << "sluice ended without listening:\n" << read_;
  return 0;
}

std::string SluiceProcess::all_output() {
  while (!line().empty()) {
  }
  return read_;
}

void SluiceProcess::signal(int number) const { ::kill(pid_, number); }

int SluiceProcess::wait() {
  int status = 0;
  ::waitpid(pid_, &status, 0);
  pid_ = -1;
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

CommandResult run_sluice(const std::string& arguments, const TempDirectory& scratch,
                         const std::filesystem::path& working_directory) {
  const std::filesystem::path out = scratch.path() / "stdout";
  const std::filesystem::path err = scratch.path() / "stderr";
  const std::string input = arguments.find(" <") == std::string::npos ? " </dev/null" : "";
  const std::string cd =
      working_directory.empty() ? "" : "cd " + working_directory.string() + " && ";
  const std::string command = cd + std::string(SLUICE_BINARY) + " " + arguments + " >" +
                              out.string() + " 2>" + err.string() + input;
  const int raw = std::system(command.c_str());
  return {WIFEXITED(raw) ? WEXITSTATUS(raw) : -1, read_file(out), read_file(err)};
}

}  // namespace sluice::test
