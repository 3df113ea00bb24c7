// The sluice binary itself: its command line, exit codes and the output of `check`, `version`
// and `replay` (SPEC §1).
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "tests/support/redis_server.hpp"
#include "tests/support/sluice_process.hpp"
#include "tests/support/temp_directory.hpp"
#include "tests/support/test_certificates.hpp"

namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using Result = sluice::test::CommandResult;

std::string read_file(const std::filesystem::path& path) {
  std::ifstream in(path);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

class SluiceCli : public ::testing::Test {
 protected:
  sluice::test::TempDirectory directory_{"sluice-cli"};

  std::filesystem::path write(const std::string& name, const std::string& text) {
    return directory_.write(name, text);
  }

  /// Runs sluice with `arguments`, in `working_directory` when one is given.
  Result run(const std::string& arguments, const std::filesystem::path& working_directory = {}) {
    return sluice::test::run_sluice(arguments, directory_, working_directory);
  }
};

TEST_F(SluiceCli, CheckPrintsRoutesAndLimitersOfAValidConfig) {
  const auto config = write("proxy.yaml",
                            "upstream: http://127.0.0.1:9000\n"
                            "limiters:\n"
                            "  per-ip: {algorithm: sliding_window, limit: 100, window: 1m}\n"
                            "routes:\n"
                            "  - {name: api, match: {path_prefix: /api/}, limiters: [per-ip]}\n");
  const Result result = run("check -c " + config.string());
  EXPECT_EQ(result.status, 0) << result.err;
  EXPECT_THAT(result.out, HasSubstr(config.string() + ": OK"));
  EXPECT_THAT(result.out, HasSubstr("per-ip   sliding_window  limit 100 per 1m  ip   reject"));
  EXPECT_THAT(result.out, HasSubstr("api    /api/*  per-ip    1     http://127.0.0.1:9000"));
}

TEST_F(SluiceCli, CheckPrintsWhatTheDecisionServiceServes) {
  const auto config = write("proxy.yaml",
                            "decide: \"127.0.0.1:8081\"\n"
                            "limiters:\n"
                            "  per-ip: {algorithm: sliding_window, limit: 100, window: 1m}\n"
                            "routes:\n"
                            "  - {name: api, match: {path_prefix: /api/}, limiters: [per-ip]}\n"
                            "rls:\n"
                            "  - domain: edge\n"
                            "    descriptors:\n"
                            "      - {key: remote_address, limiter: per-ip}\n"
                            "      - {entries: [plan=gold, user], unlimited: true}\n");
  const Result result = run("check -c " + config.string());
  EXPECT_EQ(result.status, 0) << result.err;
  EXPECT_THAT(result.out, HasSubstr("api    /api/*  per-ip    1     decide only"));
  EXPECT_THAT(result.out,
              HasSubstr("decide 127.0.0.1:8081: forward auth decides the routes above (no route: "
                        "200); Envoy's rate-limit service serves:"));
  EXPECT_THAT(result.out, HasSubstr("edge    remote_address   per-ip     -"));
  EXPECT_THAT(result.out, HasSubstr("edge    plan=gold, user  unlimited  -"));
}

TEST_F(SluiceCli, CheckPrintsEveryErrorAndExitsOne) {
  const auto config = write("broken.yaml",
                            "upstream: http://127.0.0.1:9000\n"
                            "limiters:\n"
                            "  per-ip: {algorithm: sliding_window, limit: 0, windw: 1m}\n"
                            "routes: [{name: a, limiters: [per-ip, nope]}]\n");
  const Result result = run("check -c " + config.string());
  EXPECT_EQ(result.status, 1);
  const std::string file = config.string();
  // In file order, each pointing at the offending text.
  EXPECT_EQ(result.err,
            file +
                ":3:11: limiters.per-ip.window: missing (sliding_window needs limit and "
                "window)\n" +
                file +
                ":3:46: limiters.per-ip.limit: \"0\" is not a whole number from 1 to "
                "4294967295\n" +
                file +
                ":3:49: limiters.per-ip: unknown key \"windw\" (did you mean \"window\"?); "
                "accepted keys: algorithm, limit, window, calendar, timezone, slots, rate, burst, "
                "warmup, "
                "cold_factor, key, ipv6_prefix, mode, max_delay, shadow, status, lease, "
                "overrides, tier, tiers, cost or count_if\n" +
                file +
                ":4:39: routes[0].limiters: no limiter is named \"nope\"; defined: per-ip\n" +
                file + ": 4 errors\n");
  EXPECT_EQ(result.out, "");
}

TEST_F(SluiceCli, CheckAndRunNameACertificateThatCannotBeUsed) {
  const sluice::test::TestCertificates files;
  const auto config = write("tls.yaml",
                            "listen:\n  - \"127.0.0.1:0\"\n  - address: \"127.0.0.1:0\"\n"
                            "    tls: {cert: " +
                                files.expired_cert() + ", key: " + files.mismatched_key() +
                                "}\n"
                                "upstream: http://127.0.0.1:9000\nroutes: [{name: a}]\n");
  for (const char* command : {"check", "run"}) {
    const Result result = run(std::string(command) + " -c " + config.string());
    EXPECT_EQ(result.status, 1) << command;
    EXPECT_EQ(result.err, config.string() + ":4:17: listen[1].tls.cert: " + files.expired_cert() +
                              " expired on Jan  2 00:00:00 2020 GMT\n" + config.string() +
                              ": 1 error\n")
        << command;
  }
  const auto good =
      write("good.yaml", "listen: \"127.0.0.1:0\"\ntls: {cert: " + files.server_cert() +
                             ", key: " + files.server_key() +
                             "}\nupstream: http://127.0.0.1:9000\nroutes: [{name: a}]\n");
  const Result checked = run("check -c " + good.string());
  EXPECT_EQ(checked.status, 0) << checked.err;
  EXPECT_THAT(checked.out, HasSubstr("listen 127.0.0.1:0 (TLS)"));
  EXPECT_EQ(checked.err, "");
}

TEST_F(SluiceCli, CheckWarnsOfACertificateNamingAnOcspResponderWithoutItsIssuer) {
  const sluice::test::TestCertificates files;
  files.server_cert_naming("http://127.0.0.1:9", "aia");
  const std::string leaf = files.directory() + "/aia.pem";
  const auto config = write(
      "ocsp.yaml", "listen: \"127.0.0.1:0\"\ntls: {cert: " + leaf + ", key: " + files.directory() +
                       "/aia.key}\nupstream: http://127.0.0.1:9000\nroutes: [{name: a}]\n");
  const Result result = run("check -c " + config.string());
  EXPECT_EQ(result.status, 0) << "a warning, not an error: the listener serves without a staple";
  EXPECT_EQ(result.err, "warning: tls: no OCSP stapling: " + leaf +
                            " names an OCSP responder (http://127.0.0.1:9) but not its issuer's "
                            "certificate after it: the request names the issuer and its answer is "
                            "verified against it\n");
}

TEST_F(SluiceCli, NamesAMissingConfigFile) {
  const Result result = run("check -c " + (directory_.path() / "absent.yaml").string());
  EXPECT_EQ(result.status, 1);
  EXPECT_THAT(result.err, HasSubstr("absent.yaml:0:0: cannot read the file"));
}

TEST_F(SluiceCli, UsageErrorsExitTwo) {
  EXPECT_EQ(run("check --bogus").status, 2);
  EXPECT_EQ(run("check -c").status, 2);
  EXPECT_EQ(run("frobnicate").status, 2);
}

TEST_F(SluiceCli, ReplayWritesDecisionsSummaryAndReport) {
  const auto config = write("proxy.yaml",
                            "limiters:\n"
                            "  per-ip: {algorithm: fixed_window, limit: 1, window: 1m}\n"
                            "routes: [{name: all, respond: {status: 200}, limiters: [per-ip]}]\n");
  const auto log = write("access.jsonl",
                         "{\"t\": 60, \"ip\": \"203.0.113.9\"}\n"
                         "{\"t\": 61, \"ip\": \"203.0.113.9\"}\n"
                         "oops\n");
  const auto out = directory_.path() / "decisions.jsonl";
  const auto report = directory_.path() / "report.html";
  const Result result = run("replay -c " + config.string() + " --out " + out.string() +
                            " --report " + report.string() + " " + log.string());
  EXPECT_EQ(result.status, 0) << result.err;
  EXPECT_EQ(result.out, "");
  EXPECT_EQ(read_file(out),
            "{\"i\":0,\"t\":60,\"route\":\"all\",\"decision\":\"allowed\",\"status\":200,"
            "\"delay\":0,\"limiters\":[\"per-ip\"],\"remaining\":0,\"retry_after\":0}\n"
            "{\"i\":1,\"t\":61,\"route\":\"all\",\"decision\":\"limited\",\"status\":429,"
            "\"delay\":0,\"limiters\":[\"per-ip\"],\"remaining\":0,\"retry_after\":59,"
            "\"violated\":[\"per-ip\"]}\n");
  EXPECT_THAT(result.err, HasSubstr("replayed 2 requests"));
  EXPECT_THAT(result.err, HasSubstr("line 3: not a JSON object"));
  EXPECT_THAT(result.err, HasSubstr("1  per-ip 203.0.113.9"));
  EXPECT_THAT(read_file(report), HasSubstr("<svg"));
}

TEST_F(SluiceCli, ReplayReadsCombinedLogsFromStdin) {
  const auto config = write("proxy.yaml", "routes: [{name: all, respond: {status: 204}}]\n");
  const auto log = write("access.log",
                         "203.0.113.9 - - [10/Oct/2024:13:55:36 +0000] \"GET /x HTTP/1.1\" 200 5 "
                         "\"-\" \"curl/8\"\n");
  const Result result =
      run("replay --format combined -c " + config.string() + " - <" + log.string());
  EXPECT_EQ(result.status, 0) << result.err;
  EXPECT_THAT(result.out, HasSubstr("\"t\":1728568536,\"route\":\"all\",\"decision\":\"allowed\","
                                    "\"status\":204"));
}

TEST_F(SluiceCli, ReplayRefusesBadArgumentsAndFiles) {
  const auto config = write("proxy.yaml", "routes: [{name: all, respond: {status: 204}}]\n");
  EXPECT_EQ(run("replay --format xml -c " + config.string()).status, 2);
  EXPECT_EQ(run("replay -c " + config.string() + " a.log b.log").status, 2);
  EXPECT_EQ(run("replay -c " + config.string() + " /nonexistent.log").status, 1);
  EXPECT_EQ(run("replay -c /nonexistent.yaml -").status, 1);
  EXPECT_EQ(run("replay --help").status, 0);
}

TEST_F(SluiceCli, CheckAndReplayNameAKeyFileOrKeySetTheyCannotUse) {
  const auto pem = write("idp.pem", "not a key\n");
  const auto local = write("local.yaml",
                           "upstream: http://127.0.0.1:9000\n"
                           "auth: {jwt: {idp: {issuer: i, keys: [{file: " +
                               pem.string() +
                               ", alg: ES256}]}}}\n"
                               "routes: [{name: a, auth: {jwt: idp}}]\n");
  const Result check = run("check -c " + local.string());
  EXPECT_EQ(check.status, 1);
  EXPECT_THAT(check.err, HasSubstr(local.string() + ":2:38: auth.jwt.idp.keys[0]: " + pem.string() +
                                   ": not a public key in PEM"));
  const Result replay = run("replay -c " + local.string() + " /dev/null");
  EXPECT_EQ(replay.status, 1);
  EXPECT_THAT(replay.err, HasSubstr("auth.jwt.idp.keys[0]: "));
  const auto fetched = write("fetched.yaml",
                             "upstream: http://127.0.0.1:9000\n"
                             "auth: {jwt: {idp: {issuer: i, algorithms: [RS256], jwks: {url: "
                             "\"https://idp.example.com/jwks.json\"}}}}\n"
                             "routes: [{name: a, auth: {jwt: idp}}]\n");
  const Result offline = run("replay -c " + fetched.string() + " /dev/null");
  EXPECT_EQ(offline.status, 1);
  EXPECT_THAT(offline.err, HasSubstr(fetched.string() +
                                     ":2:58: auth.jwt.idp.jwks.url: replay does not fetch key "
                                     "sets; give the same keys as jwks: {file} or keys"));
}

TEST_F(SluiceCli, HelpAndVersionExitZero) {
  const Result help = run("check --help");
  EXPECT_EQ(help.status, 0);
  EXPECT_THAT(help.out, HasSubstr("sluice check [-c FILE]"));
  const Result version = run("version");
  EXPECT_EQ(version.status, 0);
  EXPECT_THAT(version.out, HasSubstr("sluice "));
}

TEST_F(SluiceCli, HelpOnEveryCommandExitsZeroAndNamesItsOptions) {
  struct Case {
    std::string arguments;
    std::vector<std::string> names;
  };
  const std::vector<Case> cases = {
      {"--help",
       {"Usage: sluice [COMMAND] [-c FILE]", "-c,--config FILE", "--version", "run", "check",
        "health", "replay", "version", "Every command takes --help."}},
      {"-h", {"Usage: sluice [COMMAND] [-c FILE]"}},
      {"help", {"Usage: sluice [COMMAND] [-c FILE]", "-c,--config FILE"}},
      {"run --help", {"Usage: sluice [run] [-c FILE]", "-c,--config FILE", "./proxy.yaml"}},
      {"check --help", {"Usage: sluice check [-c FILE]", "-c,--config FILE"}},
      {"health --help", {"Usage: sluice health [-c FILE]", "-c,--config FILE", "/healthz"}},
      {"replay --help",
       {"Usage: sluice replay [-c FILE] [--format jsonl|combined] [--out FILE] "
        "[--report FILE.html] [LOG|-]",
        "-c,--config FILE", "--format jsonl|combined", "--out FILE", "--report FILE.html", "LOG"}},
      {"help replay", {"Usage: sluice replay [-c FILE]", "--format jsonl|combined"}},
      {"version --help", {"Usage: sluice version"}},
      // Help wins over everything else on the line, even an argument that is wrong.
      {"check -c /nonexistent.yaml --bogus -h", {"Usage: sluice check [-c FILE]"}},
  };
  for (const Case& c : cases) {
    const Result result = run(c.arguments);
    EXPECT_EQ(result.status, 0) << c.arguments << ":\n" << result.err;
    EXPECT_EQ(result.err, "") << c.arguments;
    for (const std::string& name : c.names) {
      EXPECT_THAT(result.out, HasSubstr(name)) << c.arguments;
    }
  }
}

TEST_F(SluiceCli, EachKindOfUsageErrorExitsTwoWithAMessage) {
  const std::string config =
      write("proxy.yaml", "routes: [{name: all, respond: {status: 204}}]\n").string();
  struct Case {
    std::string arguments;
    std::string message;
  };
  const std::vector<Case> cases = {
      {"frobnicate", "sluice: unknown command 'frobnicate'\nRun 'sluice --help' for usage.\n"},
      {"--bogus", "sluice: unknown option '--bogus'\n"},
      {"check -c " + config + " --bogus", "sluice check: unknown option '--bogus'\n"},
      {"check -c", "sluice check: --config: 1 required FILE missing\n"},
      {"-c", "sluice: --config: 1 required FILE missing\n"},
      {"check -c " + config + " extra", "sluice check: unexpected argument 'extra'\n"},
      {"version now", "sluice version: unexpected argument 'now'\n"},
      {"replay -c " + config + " --format xml",
       "sluice replay: --format: \"xml\" is neither jsonl nor combined\n"
       "Run 'sluice replay --help' for usage.\n"},
      {"replay -c " + config + " --format", "sluice replay: --format: 1 required"},
      {"replay -c " + config + " a.log b.log", "sluice replay: unexpected argument 'b.log'\n"},
      {"help frobnicate", "sluice help: COMMAND: frobnicate not in"},
  };
  for (const Case& c : cases) {
    const Result result = run(c.arguments);
    EXPECT_EQ(result.status, 2) << c.arguments << ":\n" << result.err;
    EXPECT_THAT(result.err, HasSubstr(c.message)) << c.arguments;
    EXPECT_EQ(result.out, "") << c.arguments;
  }
}

TEST_F(SluiceCli, VersionFlagPrintsWhatTheVersionCommandPrints) {
  const Result command = run("version");
  const Result flag = run("--version");
  EXPECT_EQ(flag.status, 0);
  EXPECT_THAT(flag.out, ::testing::StartsWith("sluice "));
  EXPECT_EQ(flag.out, command.out);
}

TEST_F(SluiceCli, ConfigOptionWorksBeforeTheCommandAndTakesItsLastValue) {
  const std::string config =
      write("proxy.yaml", "routes: [{name: all, respond: {status: 204}}]\n").string();
  const std::string absent = (directory_.path() / "absent.yaml").string();
  const Result before = run("-c " + config + " check");
  EXPECT_EQ(before.status, 0) << before.err;
  EXPECT_THAT(before.out, HasSubstr(config + ": OK"));
  const Result twice = run("check --config " + absent + " --config=" + config);
  EXPECT_EQ(twice.status, 0) << twice.err;
  EXPECT_THAT(twice.out, HasSubstr(config + ": OK"));
}

TEST_F(SluiceCli, NoCommandRunsTheProxyOnProxyYamlOfTheWorkingDirectory) {
  // The proxy stops at once: nothing listens on port 1, so its Redis store cannot connect.
  write("proxy.yaml",
        "listen: \"127.0.0.1:0\"\nadmin: \"\"\n"
        "store: {type: redis, redis: {url: \"redis://127.0.0.1:1/0\"}}\n"
        "routes: [{name: all, respond: {status: 204}}]\n");
  for (const std::string arguments : {"", "-c proxy.yaml"}) {
    const Result result = run(arguments, directory_.path());
    EXPECT_EQ(result.status, 1) << "'" << arguments << "'";
    EXPECT_THAT(result.err, HasSubstr("redis://127.0.0.1:1/0")) << "'" << arguments << "'";
    EXPECT_THAT(result.err, HasSubstr("cannot connect")) << "'" << arguments << "'";
  }
}

TEST_F(SluiceCli, RunNamesTheListenerItCannotBind) {
  // A socket that holds a port without SO_REUSEPORT: sluice's listeners cannot share it.
  boost::asio::io_context io;
  boost::asio::ip::tcp::acceptor taken(io, {boost::asio::ip::make_address("127.0.0.1"), 0});
  const std::string port = std::to_string(taken.local_endpoint().port());
  const auto config = write("proxy.yaml", "listen:\n  - \"127.0.0.1:0\"\n  - \"127.0.0.1:" + port +
                                              "\"\nadmin: \"\"\n"
                                              "upstream: http://127.0.0.1:9000\n"
                                              "routes: [{name: all}]\n");
  const Result result = run("run -c " + config.string());
  EXPECT_EQ(result.status, 1);
  EXPECT_EQ(result.err,
            "sluice: cannot listen on 127.0.0.1:" + port + ": Address already in use\n");
}

TEST_F(SluiceCli, RunStopsWithTheRedactedUrlWhenRedisCannotBeReached) {
  // Nothing listens on port 1: the connection is refused at once.
  const auto config =
      write("proxy.yaml",
            "listen: \"127.0.0.1:0\"\nadmin: \"\"\n"
            "upstream: http://127.0.0.1:9000\n"
            "store: {type: redis, redis: {url: \"redis://:hunter2@127.0.0.1:1/0\"}}\n"
            "routes: [{name: all}]\n");
  const Result result = run("run -c " + config.string());
  EXPECT_EQ(result.status, 1);
  EXPECT_THAT(result.err, HasSubstr("redis://:***@127.0.0.1:1/0"));
  EXPECT_THAT(result.err, HasSubstr("cannot connect"));
  EXPECT_THAT(result.err + result.out, ::testing::Not(HasSubstr("hunter2")));
}

TEST_F(SluiceCli, CheckShowsEveryUrlWithoutItsPassword) {
  // "p@ss/w:rd%" percent-encoded.
  const auto config = write("proxy.yaml",
                            "upstream: http://127.0.0.1:9000\n"
                            "store: {type: redis, redis: {url: "
                            "\"redis://app:p%40ss%2Fw%3Ard%25@127.0.0.1:6379/0\"}}\n"
                            "routes: [{name: all}]\n");
  const Result result = run("check -c " + config.string());
  EXPECT_EQ(result.status, 0) << result.err;
  EXPECT_THAT(result.out, HasSubstr("store redis://app:***@127.0.0.1:6379/0 (at most"));
  EXPECT_THAT(result.out + result.err, Not(HasSubstr("p%40ss")));
  EXPECT_THAT(result.out + result.err, Not(HasSubstr("w:rd")));
}

TEST_F(SluiceCli, CheckNamesAMalformedUrlWithoutItsPassword) {
  // The same password, not percent-encoded: its '@' and '/' break the URL.
  const auto config = write("proxy.yaml",
                            "upstream: http://127.0.0.1:9000\n"
                            "store:\n"
                            "  type: redis\n"
                            "  redis: {url: \"redis://app:p@ss/w:rd%@127.0.0.1:6379/0\"}\n"
                            "routes: [{name: all}]\n");
  const Result result = run("check -c " + config.string());
  EXPECT_EQ(result.status, 1);
  EXPECT_THAT(result.err, HasSubstr(config.string() +
                                    ":4:16: store.redis.url: \"redis://***@127.0.0.1:6379\" is not "
                                    "a valid URL (RFC 3986); percent-encode / ? # %"));
  EXPECT_THAT(result.out + result.err, Not(HasSubstr("p@ss")));
  EXPECT_THAT(result.out + result.err, Not(HasSubstr("w:rd")));
}

TEST_F(SluiceCli, RunStopsWithTheRedactedUrlWhenThePasswordIsWrong) {
  const sluice::test::RedisServer redis("p@ss/w:rd%");
  const std::string url = "redis://app:p%40ss%2Fw%3Ard@127.0.0.1:" + std::to_string(redis.port());
  const auto config = write("proxy.yaml",
                            "listen: \"127.0.0.1:0\"\nadmin: \"\"\n"
                            "upstream: http://127.0.0.1:9000\n"
                            "store: {type: redis, redis: {url: \"" +
                                url +
                                "\"}}\n"
                                "routes: [{name: all}]\n");
  const Result result = run("run -c " + config.string());
  EXPECT_EQ(result.status, 1);
  EXPECT_THAT(result.err, HasSubstr("redis://app:***@127.0.0.1:" + std::to_string(redis.port()) +
                                    ": AUTH failed: WRONGPASS"));
  EXPECT_THAT(result.out + result.err, Not(HasSubstr("p%40ss")));
  EXPECT_THAT(result.out + result.err, Not(HasSubstr("p@ss")));
}

TEST_F(SluiceCli, TheShippedConfigsAreValid) {
  // The compose files take their addresses from the environment.
  ::setenv("UPSTREAM", "http://127.0.0.1:9000", 1);
  ::setenv("REDIS_URL", "redis://127.0.0.1:6379/0", 1);
  for (const char* file : {"proxy.yaml", "docker/proxy.yaml", "docker/compose/proxy.yaml",
                           "docker/compose/shared.yaml"}) {
    const Result result = run("check -c " + std::string(SLUICE_SOURCE_DIR) + "/" + file);
    EXPECT_EQ(result.status, 0) << file << ":\n" << result.err;
  }
}

}  // namespace
