// The decision service behind the gateways people run (SPEC §11), each the real program from
// Debian with the configuration docs/gateways/ gives: nginx's auth_request and Caddy's
// forward_auth in front of a test upstream, sluice deciding. Requests the limit admits reach
// the upstream; the others get 429 with Retry-After and never reach it.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>

#include "tests/support/child_process.hpp"
#include "tests/support/proxy_fixture.hpp"
#include "tests/support/temp_directory.hpp"

namespace sluice::test {
namespace {

constexpr std::string_view kTwoPerClient =
    "limiters: {per-ip: {algorithm: sliding_log, limit: 2, window: 1m}}\n"
    "routes: [{name: api, match: {path_prefix: /api}, limiters: [per-ip]}]";

/// docs/gateways/`name` with its placeholders filled in.
std::string gateway_config(const std::string& name, const TempDirectory& directory,
                           unsigned short port, unsigned short decide_port,
                           unsigned short upstream_port) {
  std::ifstream in(std::string(SLUICE_SOURCE_DIR) + "/docs/gateways/" + name);
  std::stringstream text;
  text << in.rdbuf();
  std::string config = text.str();
  const std::pair<std::string, std::string> words[] = {
      {"@DIR@", directory.path().string()},
      {"@PORT@", std::to_string(port)},
      {"@DECIDE_PORT@", std::to_string(decide_port)},
      {"@UPSTREAM_PORT@", std::to_string(upstream_port)}};
  for (const auto& [word, value] : words) {
    for (std::size_t at = config.find(word); at != std::string::npos;
         at = config.find(word, at + value.size())) {
      config.replace(at, word.size(), value);
    }
  }
  return config;
}

/// A port nothing listens on now: the kernel's pick for a socket closed at once.
unsigned short unused_port() {
  net::io_context io;
  tcp::acceptor acceptor(io, tcp::endpoint(net::ip::make_address("127.0.0.1"), 0));
  return acceptor.local_endpoint().port();
}

/// Whether something accepts connections on 127.0.0.1:`port` within 10 s.
bool listening_on(unsigned short port) {
  return holds_within(std::chrono::seconds(10), [&] {
    net::io_context io;
    tcp::socket socket(io);
    beast::error_code ec;
    socket.connect(tcp::endpoint(net::ip::make_address("127.0.0.1"), port), ec);
    return !ec;
  });
}

/// sluice deciding for a gateway: its decision service, and the upstream the gateway forwards to
/// (the fixture's, which counts what reaches it).
class DecideGateway : public ::testing::Test {
 protected:
  DecideGateway()
      : sluice_(std::string(kTwoPerClient), "decide: \"127.0.0.1:0\"\n"),
        directory_("sluice-gateway") {}

  unsigned short decide_port() { return sluice_.server().decide_endpoint().port(); }
  int upstream_requests() { return sluice_.upstream().requests(); }

  /// GETs `target` through the gateway on `port` three times: the limit admits two.
  void expect_two_then_429(unsigned short port) {
    for (int i = 0; i < 2; ++i) {
      auto admitted = send_request(port, get("/api/items"));
      EXPECT_EQ(admitted.result_int(), 200) << admitted;
    }
    auto refused = send_request(port, get("/api/items"));
    EXPECT_EQ(refused.result_int(), 429) << refused;
    EXPECT_EQ(refused["Retry-After"], "60");
    EXPECT_EQ(refused["RateLimit"], "\"per-ip\";r=0;t=60");
    EXPECT_EQ(upstream_requests(), 2);  // the refused one never reached it
  }

  ProxyFixture sluice_;
  TempDirectory directory_;
};

TEST_F(DecideGateway, NginxAuthRequestGets429WithRetryAfter) {
  const unsigned short port = unused_port();
  const auto config = directory_.write(
      "nginx.conf",
      gateway_config("nginx.conf", directory_, port, decide_port(), sluice_.upstream().port()));
  // One process (no master with workers): killed with the test, nothing left behind.
  const ChildProcess nginx({"/bin/sh", "-c",
                            "echo started; exec nginx -e " + directory_.path().string() +
                                "/error.log -p " + directory_.path().string() + " -c " +
                                config.string() + " -g 'master_process off;'"});
  ASSERT_TRUE(listening_on(port)) << "nginx did not start";
  expect_two_then_429(port);
}

TEST_F(DecideGateway, CaddyForwardAuthPasses429AsItIs) {
  const unsigned short port = unused_port();
  const auto config = directory_.write(
      "Caddyfile",
      gateway_config("Caddyfile", directory_, port, decide_port(), sluice_.upstream().port()));
  const std::string home = directory_.path().string();
  const ChildProcess caddy({"/bin/sh", "-c",
                            "echo started; HOME=" + home + " XDG_DATA_HOME=" + home +
                                " XDG_CONFIG_HOME=" + home +
                                " exec caddy run --adapter caddyfile "
                                "--config " +
                                config.string() + " 2>" + home + "/caddy.log"});
  ASSERT_TRUE(listening_on(port)) << "caddy did not start";
  expect_two_then_429(port);
  // Caddy passes sluice's own answer through: its problem+json body says which limit.
  auto refused = send_request(port, get("/api/items"));
  EXPECT_EQ(refused[http::field::content_type], "application/problem+json");
  EXPECT_NE(refused.body().find("\"per-ip\""), std::string::npos) << refused.body();
}

}  // namespace
}  // namespace sluice::test
