#include "tests/support/https_upstream.hpp"

#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <stdexcept>
#include <vector>

namespace sluice::test {

HttpsUpstream::HttpsUpstream(const std::string& cert, const std::string& key,
                             const std::string& client_ca) {
  std::array<int, 2> pipe_ends{};
  if (::pipe(pipe_ends.data()) != 0) {
    throw std::runtime_error("https upstream: no pipe");
  }
  const std::string script = SLUICE_SOURCE_DIR "/tests/support/https_upstream.py";
  std::vector<std::string> arguments = {"/usr/bin/python3", script, cert, key};
  if (!client_ca.empty()) {
    arguments.push_back(client_ca);
  }
  pid_ = ::fork();
  if (pid_ == 0) {
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);  // never outlives the test
    ::dup2(pipe_ends[1], STDOUT_FILENO);
    ::close(pipe_ends[0]);
    std::vector<char*> argv;
    for (std::string& argument : arguments) {
      argv.push_back(argument.data());
    }
    argv.push_back(nullptr);
    ::execv(argv[0], argv.data());
    ::_exit(127);
  }
  ::close(pipe_ends[1]);
  std::string line;
  char c = 0;
  while (::read(pipe_ends[0], &c, 1) == 1 && c != '\n') {
    line += c;
  }
  ::close(pipe_ends[0]);
  if (line.empty()) {
    throw std::runtime_error("https upstream: " + script + " did not start");
  }
  port_ = static_cast<unsigned short>(std::stoi(line));
}

HttpsUpstream::~HttpsUpstream() {
  if (pid_ > 0) {
    ::kill(pid_, SIGKILL);
    ::waitpid(pid_, nullptr, 0);
  }
}

}  // namespace sluice::test
