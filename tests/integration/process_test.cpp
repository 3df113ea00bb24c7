// The sluice binary as it runs in production: started with a config file, in front of a real
// upstream, stopped and reloaded with real signals.
#include <gtest/gtest.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <future>
#include <string>
#include <thread>
#include <vector>

#include "tests/support/proxy_fixture.hpp"
#include "tests/support/redis_server.hpp"

extern char** environ;  // NOLINT: posix_spawn passes the test's environment on

namespace sluice::test {
namespace {

using namespace std::chrono_literals;

/// `sluice run -c FILE` as a child process; its standard output is read to learn the port.
class SluiceProcess {
 public:
  explicit SluiceProcess(const std::filesystem::path& config) {
    int pipe_ends[2];
    EXPECT_EQ(::pipe(pipe_ends), 0);
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_adddup2(&actions, pipe_ends[1], STDOUT_FILENO);
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
  SluiceProcess(const SluiceProcess&) = delete;
  SluiceProcess& operator=(const SluiceProcess&) = delete;
  SluiceProcess(SluiceProcess&&) = delete;
  SluiceProcess& operator=(SluiceProcess&&) = delete;
  ~SluiceProcess() {
    if (pid_ > 0) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, nullptr, 0);
    }
    if (output_ != nullptr) {
      std::fclose(output_);
    }
  }

  /// The next line it prints ("" at end of output).
  std::string line() {
    std::array<char, 512> text{};
    return std::fgets(text.data(), static_cast<int>(text.size()), output_) != nullptr
               ? std::string(text.data())
               : std::string();
  }

  /// Waits for "listening on HOST:PORT" and returns the port.
  unsigned short port() {
    const std::string first = line();
    const std::size_t colon = first.find(':', first.find("listening on"));
    EXPECT_NE(colon, std::string::npos) << first;
    return static_cast<unsigned short>(std::stoi(first.substr(colon + 1)));
  }

  void signal(int number) const { ::kill(pid_, number); }

  /// Waits for it to exit; its exit status, or -1 if a signal ended it.
  int wait() {
    int status = 0;
    ::waitpid(pid_, &status, 0);
    pid_ = -1;
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  }

 private:
  pid_t pid_ = -1;
  std::FILE* output_ = nullptr;
};

class SluiceBinary : public ::testing::Test {
 protected:
  std::filesystem::path directory_ =
      std::filesystem::temp_directory_path() /
      ("sluice-process-" + std::to_string(::getpid()) + "-" +
       ::testing::UnitTest::GetInstance()->current_test_info()->name());
  sluice::test::TestUpstream upstream_;

  void SetUp() override { std::filesystem::create_directories(directory_); }
  void TearDown() override { std::filesystem::remove_all(directory_); }

  std::filesystem::path write_config(const std::string& routes) {
    const std::filesystem::path path = directory_ / "proxy.yaml";
    std::ofstream(path) << "listen: \"127.0.0.1:0\"\nadmin: \"\"\nthreads: 2\n"
                        << "upstream: \"http://127.0.0.1:" << upstream_.port() << "\"\n"
                        << "timeouts: {drain: 5s}\nlog: {access: false}\n"
                        << routes << "\n";
    return path;
  }
};

TEST_F(SluiceBinary, DrainsTheRequestInFlightOnSigtermAndExitsZero) {
  SluiceProcess sluice(write_config("routes: [{name: all}]"));
  const unsigned short port = sluice.port();
  auto in_flight =
      std::async(std::launch::async, [port] { return send_request(port, get("/slow")); });
  while (upstream_.requests() == 0) {  // the upstream has it, and answers in a second
    std::this_thread::yield();
  }
  const auto signalled = std::chrono::steady_clock::now();
  sluice.signal(SIGTERM);
  EXPECT_EQ(in_flight.get().result(), http::status::ok);
  EXPECT_EQ(sluice.wait(), 0);
  EXPECT_LT(std::chrono::steady_clock::now() - signalled, 5s);  // within timeouts.drain
}

TEST_F(SluiceBinary, ReloadsItsFileOnSighup) {
  const auto config = write_config("routes: [{name: all}]");
  SluiceProcess sluice(config);
  const unsigned short port = sluice.port();
  EXPECT_EQ(send_request(port, get("/")).result(), http::status::ok);
  std::ofstream(config) << "listen: \"127.0.0.1:0\"\nadmin: \"\"\nthreads: 2\n"
                        << "upstream: \"http://127.0.0.1:" << upstream_.port() << "\"\n"
                        << "routes: [{name: all, respond: {status: 418, body: teapot}}]\n";
  sluice.signal(SIGHUP);
  // The new route answers once the signal has been handled.
  bool reloaded = false;
  const auto deadline = std::chrono::steady_clock::now() + 10s;
  while (!reloaded && std::chrono::steady_clock::now() < deadline) {
    reloaded = send_request(port, get("/")).result_int() == 418;
  }
  EXPECT_TRUE(reloaded);
  sluice.signal(SIGTERM);
  EXPECT_EQ(sluice.wait(), 0);
}

TEST_F(SluiceBinary, TwoProcessesSharingRedisAdmitExactlyTheLimitTogether) {
  const sluice::test::RedisServer redis;
  const auto config = write_config("store: {type: redis, redis: {url: \"" + redis.url() +
                                   "\", timeout: 1s}}\n"
                                   "limiters:\n"
                                   "  shared: {algorithm: sliding_log, limit: 30, window: 1h}\n"
                                   "routes: [{name: all, limiters: [shared]}]");
  SluiceProcess first(config);
  SluiceProcess second(config);
  const std::array<unsigned short, 2> ports{first.port(), second.port()};
  std::atomic<int> admitted{0};
  std::atomic<int> limited{0};
  std::vector<std::thread> clients;
  for (std::size_t c = 0; c < 4; ++c) {
    clients.emplace_back([&, c] {
      for (std::size_t i = 0; i < 20; ++i) {
        const auto response = send_request(ports[(c + i) % 2], get("/"));
        (response.result() == http::status::ok ? admitted : limited) += 1;
        EXPECT_TRUE(response.result() == http::status::ok ||
                    response.result() == http::status::too_many_requests);
      }
    });
  }
  for (std::thread& client : clients) {
    client.join();
  }
  EXPECT_EQ(admitted, 30);
  EXPECT_EQ(limited, 50);
  first.signal(SIGTERM);
  second.signal(SIGTERM);
  EXPECT_EQ(first.wait(), 0);
  EXPECT_EQ(second.wait(), 0);
}

/// A port nothing listens on now (the kernel's pick for a socket closed at once).
unsigned short free_port() {
  net::io_context io;
  tcp::acceptor probe(io, tcp::endpoint(net::ip::make_address("127.0.0.1"), 0));
  return probe.local_endpoint().port();
}

/// `sluice health -c FILE`: its exit status.
int health(const std::filesystem::path& config) {
  const std::string command =
      std::string(SLUICE_BINARY) + " health -c " + config.string() + " 2>/dev/null";
  const int raw = std::system(command.c_str());
  return WIFEXITED(raw) ? WEXITSTATUS(raw) : -1;
}

TEST_F(SluiceBinary, HealthAsksTheAdminPortOfTheRunningProxy) {
  // A wildcard admin address, as in a container: health asks it on loopback.
  const std::filesystem::path config = directory_ / "health.yaml";
  std::ofstream(config) << "listen: \"127.0.0.1:0\"\nadmin: \"0.0.0.0:" << free_port() << "\"\n"
                        << "upstream: \"http://127.0.0.1:" << upstream_.port() << "\"\n"
                        << "log: {access: false}\nroutes: [{name: all}]\n";
  EXPECT_EQ(health(config), 1);  // nothing runs yet
  SluiceProcess sluice(config);
  sluice.port();  // listening
  EXPECT_EQ(health(config), 0);
  sluice.signal(SIGTERM);
  EXPECT_EQ(sluice.wait(), 0);
  EXPECT_EQ(health(config), 1);
}

}  // namespace
}  // namespace sluice::test
