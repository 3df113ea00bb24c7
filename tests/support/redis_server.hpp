#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

namespace sluice::test {

/// A loopback port nothing listens on now.
unsigned short free_loopback_port();

/// A real redis-server for tests: Debian's binary, on a free loopback port, without persistence,
/// started by the constructor and killed by the destructor. It can be paused (SIGSTOP) and
/// resumed, as a hung Redis would be.
class RedisServer {
 public:
  /// `password`: required from clients (requirepass) when not empty. `arguments`: more of
  /// redis-server's options (`--rename-command`, ...).
  explicit RedisServer(const std::string& password = "", std::vector<std::string> arguments = {});
  RedisServer(const RedisServer&) = delete;
  RedisServer& operator=(const RedisServer&) = delete;
  RedisServer(RedisServer&&) = delete;
  RedisServer& operator=(RedisServer&&) = delete;
  ~RedisServer();

  unsigned short port() const noexcept { return port_; }
  /// `redis://[:password@]127.0.0.1:PORT/db`, the password percent-encoded.
  std::string url(unsigned db = 0) const;

  void pause() const;
  void resume() const;
  /// Kills the server (SIGKILL: it forgets everything), and starts a new one on the same port.
  void kill();
  void start();

 private:
  std::string password_;
  std::vector<std::string> arguments_;
  unsigned short port_ = 0;
  pid_t pid_ = -1;
};

}  // namespace sluice::test
