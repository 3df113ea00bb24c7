#include "proxy/live/watched_files.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "config/load_config.hpp"
#include "tests/support/temp_directory.hpp"

namespace sluice::live {
namespace {

using ::testing::ElementsAre;
using ::testing::UnorderedElementsAre;
namespace fs = std::filesystem;

config::ProxyConfig config_of(const std::string& yaml) {
  return config::parse_config(yaml, "proxy.yaml",
                              [](std::string_view) { return std::optional<std::string>(); });
}

constexpr const char* kFiles =
    "listen:\n"
    "  - \":8080\"\n"
    "  - {address: \":8443\", tls: {cert: /certs/tls.crt, key: /certs/tls.key, client_ca: "
    "/ca/ca.pem, client_cert: optional, ocsp: /certs/tls.ocsp}}\n"
    "upstream_tls: {ca: /ca/upstream.pem}\n"
    "upstream: http://127.0.0.1:9000\n"
    "auth:\n"
    "  jwt:\n"
    "    idp:\n"
    "      issuer: https://idp.test\n"
    "      algorithms: [RS256]\n"
    "      keys: [{file: /keys/idp.pem, alg: RS256}]\n"
    "routes: [{name: a}]\n";

TEST(WatchedFiles, AreTheConfigAndEveryFileItNames) {
  EXPECT_THAT(watched_files(config_of(std::string("watch: true\n") + kFiles)),
              ElementsAre("proxy.yaml", "/certs/tls.crt", "/certs/tls.key", "/ca/ca.pem",
                          "/certs/tls.ocsp", "/ca/upstream.pem", "/keys/idp.pem"));
}

TEST(WatchedFiles, IncludeTheDecisionServicesCertificateAndEnvoyFiles) {
  const config::ProxyConfig config = config_of(
      "watch: true\n"
      "decide: {address: \"127.0.0.1:8081\", tls: {cert: /certs/decide.crt, key: "
      "/certs/decide.key}}\n"
      "rls: [{envoy_config: " SLUICE_SOURCE_DIR
      "/tests/data/envoy_ratelimit/edge.yaml}]\n"
      "routes: [{name: a}]\n");
  EXPECT_THAT(watched_files(config),
              ElementsAre("proxy.yaml", "/certs/decide.crt", "/certs/decide.key",
                          SLUICE_SOURCE_DIR "/tests/data/envoy_ratelimit/edge.yaml"));
}

TEST(WatchedFiles, AreNoneWithoutWatch) { EXPECT_TRUE(watched_files(config_of(kFiles)).empty()); }

TEST(WatchedFiles, TheirDirectoriesIncludeWhereALinkLeads) {
  const test::TempDirectory directory("sluice-watched");
  fs::create_directory(directory.path() / "..2026_01");
  directory.write("..2026_01/proxy.yaml", "routes: []\n");
  fs::create_directory_symlink("..2026_01", directory.path() / "..data");
  fs::create_symlink("..data/proxy.yaml", directory.path() / "proxy.yaml");
  const std::string real = fs::canonical(directory.path()).string();
  EXPECT_THAT(watched_directories({(directory.path() / "proxy.yaml").string()}),
              UnorderedElementsAre(directory.path().string(), real + "/..2026_01"));
}

TEST(FileStamps, ChangeWithTheContentOnly) {
  const test::TempDirectory directory("sluice-watched");
  const std::string file = directory.write("proxy.yaml", "one").string();
  const FileStamps before{{file, stamp_of(file)}};
  EXPECT_TRUE(before.at(file).readable);

  directory.write("proxy.yaml", "one");  // rewritten, the same bytes
  EXPECT_TRUE(changed_files(before, restamp(before)).empty());
  directory.write("proxy.yaml", "two");
  EXPECT_THAT(changed_files(before, restamp(before)), ElementsAre(file));
  fs::remove(file);
  EXPECT_FALSE(stamp_of(file).readable);
  EXPECT_THAT(changed_files(before, restamp(before)), ElementsAre(file));
}

}  // namespace
}  // namespace sluice::live
