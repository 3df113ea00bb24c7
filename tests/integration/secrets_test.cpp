// Secrets never leave: a Redis password (with '@', '/' and ':', percent-encoded in the URL and
// given through ${VAR}) and the tokens clients send (bearer, API key header, cookie, query
// parameter) appear in none of what sluice writes or answers: standard output and error (logs,
// access log in both formats), `sluice check`, the admin port's pages, reload answers, the
// clients' own responses, and what it stores in Redis.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>

#include <array>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "tests/support/proxy_fixture.hpp"
#include "tests/support/redis_server.hpp"
#include "tests/support/sluice_process.hpp"
#include "tests/support/temp_directory.hpp"

namespace sluice::test {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

constexpr const char* kPassword = "p@ss/w:rd";
/// Every secret, in every spelling it might leak in.
const std::array<std::string, 8> kSecrets{kPassword,           "p%40ss%2Fw%3Ard", "bearer-SECRET-1",
                                          "apikey-SECRET-2",   "cookie-SECRET-3", "query-SECRET-4",
                                          "override-SECRET-5", "SECRET"};

/// A response as it came over the wire: status line, header and body.
std::string text_of(const http::response<http::string_body>& response) {
  std::ostringstream text;
  text << response;
  return text.str();
}

class Secrets : public ::testing::Test {
 protected:
  TempDirectory directory_{"sluice-secrets"};
  TestUpstream upstream_;
  RedisServer redis_{kPassword};
  unsigned short admin_port_ = free_port();

  void SetUp() override { ::setenv("SLUICE_TEST_REDIS_URL", redis_.url().c_str(), 1); }
  void TearDown() override { ::unsetenv("SLUICE_TEST_REDIS_URL"); }

  /// The config under test, its access log in `format`; `url` replaces the Redis URL.
  std::filesystem::path write_config(const std::string& format,
                                     const std::string& url = "${SLUICE_TEST_REDIS_URL}") {
    return directory_.write(
        "proxy.yaml",
        "listen: \"127.0.0.1:0\"\nadmin: \"127.0.0.1:" + std::to_string(admin_port_) +
            "\"\nthreads: 1\nupstream: \"http://127.0.0.1:" + std::to_string(upstream_.port()) +
            "\"\nstore: {type: redis, redis: {url: \"" + url +
            "\", timeout: 1s}}\n"
            "log: {access: true, format: " +
            format +
            "}\n"
            "limiters:\n"
            "  token: {algorithm: fixed_window, limit: 1, window: 1h, key: bearer}\n"
            "  api-key: {algorithm: fixed_window, limit: 1, window: 1h, key: "
            "\"header:X-Api-Key\"}\n"
            "  session: {algorithm: fixed_window, limit: 1, window: 1h, key: \"cookie:session\"}\n"
            "  query: {algorithm: fixed_window, limit: 1, window: 1h, key: \"query:api_key\",\n"
            "          overrides: {override-SECRET-5: {limit: 2}}}\n"
            "routes:\n"
            "  - {name: token, match: {path: /token}, limiters: [token]}\n"
            "  - {name: api-key, match: {path: /api-key}, limiters: [api-key]}\n"
            "  - {name: session, match: {path: /session}, limiters: [session]}\n"
            "  - {name: query, match: {path_prefix: /query}, limiters: [query]}\n");
  }

  /// Two requests per secret-keyed route (the second is refused); sluice's own answers, head and
  /// body.
  std::string send_secrets(unsigned short port) {
    std::string answers;
    for (int round = 0; round < 2; ++round) {
      auto token = get("/token");
      token.set(http::field::authorization, "Bearer bearer-SECRET-1");
      auto api_key = get("/api-key");
      api_key.set("X-Api-Key", "apikey-SECRET-2");
      auto session = get("/session");
      session.set(http::field::cookie, "theme=dark; session=cookie-SECRET-3");
      auto query = get("/query?page=2&api_key=query-SECRET-4");
      auto overridden = get("/query?api_key=override-SECRET-5");
      for (auto& request : {token, api_key, session, query, overridden}) {
        const auto response = send_request(port, request);
        // The test upstream echoes the request: only what sluice answers itself is its own.
        if (response.result() != http::status::ok) {
          EXPECT_EQ(response.result(), http::status::too_many_requests) << response;
          answers += text_of(response);
        }
      }
    }
    return answers;
  }

  std::string admin(const std::string& target) {
    return text_of(send_request(admin_port_, get(target)));
  }

  std::string reload() { return text_of(send_request(admin_port_, post("/reload"))); }

  /// What Redis holds: every key's name.
  std::string redis_keys() const {
    const std::filesystem::path out = directory_.path() / "keys";
    const std::string command = "REDISCLI_AUTH='" + std::string(kPassword) +
                                "' redis-cli --no-auth-warning -p " +
                                std::to_string(redis_.port()) + " --scan >" + out.string();
    EXPECT_EQ(std::system(command.c_str()), 0);
    return read_all(out);
  }

  static std::string read_all(const std::filesystem::path& path) {
    std::ifstream in(path);
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  }
};

void expect_no_secret(const std::string& channel, const std::string& text) {
  for (const std::string& secret : kSecrets) {
    const std::size_t at = text.find(secret);
    EXPECT_EQ(at, std::string::npos) << channel << " shows " << secret << ": ..."
                                     << text.substr(at < 80 ? 0 : at - 80, 160) << "...";
  }
}

TEST_F(Secrets, AppearInNoOutputAnswerOrStoredKey) {
  const std::filesystem::path config = write_config("json");

  const CommandResult check = run_sluice("check -c " + config.string(), directory_);
  EXPECT_EQ(check.status, 0) << check.err;
  EXPECT_THAT(check.out, HasSubstr("redis://:***@127.0.0.1:"));
  expect_no_secret("sluice check", check.out + check.err);

  SluiceProcess sluice(config, SluiceProcess::Streams::out_and_err);
  const unsigned short port = sluice.port();
  std::string answers = send_secrets(port);
  EXPECT_THAT(answers, HasSubstr("429 Too Many Requests"));  // keys were counted, and refused
  const std::string admin_pages = admin("/config") + admin("/metrics") + admin("/healthz") +
                                  admin("/readyz") + admin("/limiters/query/query-SECRET-4");
  EXPECT_THAT(admin_pages, HasSubstr("redis://:***@127.0.0.1:"));

  // Reload into the text access log, then into a file whose URL is malformed around the
  // password (refused), then one that points at a Redis with a wrong password (kept for the
  // next start).
  write_config("text");
  std::string reloads = reload();
  EXPECT_THAT(reloads, HasSubstr("\"result\":\"success\""));
  answers += send_secrets(port);
  write_config("text", "redis://app:" + std::string(kPassword) + "@127.0.0.1:1/0");
  reloads += reload();
  write_config("text", "redis://app:p%40ss%2Fw%3Ard@127.0.0.1:1/0");
  reloads += reload();
  EXPECT_THAT(reloads, HasSubstr("\"result\":\"failure\""));

  sluice.signal(SIGTERM);
  const std::string output = sluice.all_output();
  EXPECT_EQ(sluice.wait(), 0);
  EXPECT_THAT(output, HasSubstr("\"target\":\"/query?page=2&api_key=***\""));
  EXPECT_THAT(output, HasSubstr("\"GET /query?page=2&api_key=***\""));

  expect_no_secret("responses", answers);
  expect_no_secret("admin port", admin_pages);
  expect_no_secret("reload answers", reloads);
  expect_no_secret("standard output and error", output);
  expect_no_secret("Redis keys", redis_keys());
}

TEST_F(Secrets, AppearInNoStartError) {
  // The right URL with a wrong password, then a Redis that is not there.
  const CommandResult wrong =
      run_sluice("run -c " + write_config("json", "redis://:p%40ss%2Fw%3Ard-SECRET@127.0.0.1:" +
                                                      std::to_string(redis_.port()))
                                 .string(),
                 directory_);
  EXPECT_EQ(wrong.status, 1);
  EXPECT_THAT(wrong.err, HasSubstr("AUTH failed"));
  expect_no_secret("wrong password", wrong.out + wrong.err);
  const CommandResult absent =
      run_sluice("run -c " + write_config("json", "redis://:p%40ss%2Fw%3Ard@127.0.0.1:1").string(),
                 directory_);
  EXPECT_EQ(absent.status, 1);
  EXPECT_THAT(absent.err, HasSubstr("cannot connect"));
  expect_no_secret("unreachable Redis", absent.out + absent.err);
}

}  // namespace
}  // namespace sluice::test
