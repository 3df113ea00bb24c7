#include "tests/support/redis_server.hpp"

#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <boost/url/encode.hpp>
#include <boost/url/rfc/unreserved_chars.hpp>
#include <chrono>
#include <stdexcept>
#include <thread>
#include <vector>

namespace sluice::test {
namespace {

bool accepts_connections(unsigned short port);

}  // namespace

/// A port nothing listens on now: the kernel picks it for a socket that is then closed.
unsigned short free_loopback_port() {
  const int probe = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t size = sizeof address;
  ::bind(probe, reinterpret_cast<sockaddr*>(&address), size);          // NOLINT: the sockets API
  ::getsockname(probe, reinterpret_cast<sockaddr*>(&address), &size);  // NOLINT
  ::close(probe);
  return ntohs(address.sin_port);
}

namespace {

bool accepts_connections(unsigned short port) {
  const int probe = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  address.sin_port = htons(port);
  const bool connected =
      ::connect(probe, reinterpret_cast<sockaddr*>(&address), sizeof address) == 0;  // NOLINT
  ::close(probe);
  return connected;
}

}  // namespace

RedisServer::RedisServer(const std::string& password, std::vector<std::string> arguments)
    : password_(password), arguments_(std::move(arguments)), port_(free_loopback_port()) {
  // The port was free when picked, but another process may take it before redis-server binds
  // it: then redis-server exits at once, and another port is tried.
  for (int attempt = 1;; ++attempt) {
    try {
      start();
      return;
    } catch (const std::runtime_error&) {
      if (attempt == 3) {
        throw;
      }
      port_ = free_loopback_port();
    }
  }
}

void RedisServer::start() {
  std::vector<std::string> arguments = {
      "redis-server", "--port", std::to_string(port_), "--bind", "127.0.0.1",
      "--save",       "",       "--appendonly",        "no"};
  if (!password_.empty()) {
    arguments.insert(arguments.end(), {"--requirepass", password_});
  }
  arguments.insert(arguments.end(), arguments_.begin(), arguments_.end());
  std::vector<char*> argv;
  for (std::string& argument : arguments) {
    argv.push_back(argument.data());
  }
  argv.push_back(nullptr);
  const pid_t parent = ::getpid();
  pid_ = ::fork();
  if (pid_ == 0) {
    // The server dies with the test, even one killed by a timeout or a closed pipe.
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent) {
      ::_exit(1);
    }
    const int null = ::open("/dev/null", O_WRONLY);
    ::dup2(null, STDOUT_FILENO);
    ::execvp("redis-server", argv.data());
    ::_exit(127);
  }
  if (pid_ < 0) {
    throw std::runtime_error("cannot start redis-server: fork failed");
  }
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (!accepts_connections(port_)) {
    int status = 0;
    if (::waitpid(pid_, &status, WNOHANG) == pid_) {
      pid_ = -1;
      throw std::runtime_error("redis-server exited at start (is it installed?)");
    }
    if (std::chrono::steady_clock::now() > deadline) {
      throw std::runtime_error("redis-server did not start listening within 10 s");
    }
    std::this_thread::yield();
  }
}

RedisServer::~RedisServer() { kill(); }

void RedisServer::kill() {
  if (pid_ > 0) {
    ::kill(pid_, SIGKILL);
    ::waitpid(pid_, nullptr, 0);
    pid_ = -1;
  }
}

std::string RedisServer::url(unsigned db) const {
  const std::string password = boost::urls::encode(password_, boost::urls::unreserved_chars);
  return "redis://" + (password.empty() ? "" : ":" + password + "@") +
         "127.0.0.1:" + std::to_string(port_) + "/" + std::to_string(db);
}

void RedisServer::pause() const { ::kill(pid_, SIGSTOP); }

void RedisServer::resume() const { ::kill(pid_, SIGCONT); }

}  // namespace sluice::test
