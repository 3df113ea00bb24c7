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
#include "tests/support/sluice_process.hpp"
#include "tests/support/temp_directory.hpp"

namespace sluice::test {
namespace {

using namespace std::chrono_literals;

class SluiceBinary : public ::testing::Test {
 protected:
  TempDirectory directory_{"sluice-process"};
  sluice::test::TestUpstream upstream_;

  std::filesystem::path write_config(const std::string& routes) {
    return directory_.write("proxy.yaml",
                            "listen: \"127.0.0.1:0\"\nadmin: \"\"\nthreads: 2\n"
                            "upstream: \"http://127.0.0.1:" +
                                std::to_string(upstream_.port()) +
                                "\"\n"
                                "timeouts: {drain: 5s}\nlog: {access: false}\n" +
                                routes + "\n");
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

TEST_F(SluiceBinary, ReloadsAWatchedFileWithoutASignal) {
  const auto config = write_config("watch: true\nroutes: [{name: all}]");
  SluiceProcess sluice(config);
  const unsigned short port = sluice.port();
  EXPECT_EQ(send_request(port, get("/")).result(), http::status::ok);
  std::ofstream(config) << "listen: \"127.0.0.1:0\"\nadmin: \"\"\nthreads: 2\nwatch: true\n"
                        << "routes: [{name: all, respond: {status: 418, body: teapot}}]\n";
  EXPECT_TRUE(holds_within(10s, [&] { return send_request(port, get("/")).result_int() == 418; }));
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

/// `sluice health -c FILE`: its exit status.
int health(const std::filesystem::path& config) {
  const std::string command =
      std::string(SLUICE_BINARY) + " health -c " + config.string() + " 2>/dev/null";
  const int raw = std::system(command.c_str());
  return WIFEXITED(raw) ? WEXITSTATUS(raw) : -1;
}

TEST_F(SluiceBinary, HealthAsksTheAdminPortOfTheRunningProxy) {
  // A wildcard admin address, as in a container: health asks it on loopback.
  const std::filesystem::path config = directory_.path() / "health.yaml";
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
