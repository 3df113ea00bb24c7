// `watch: true` over real files: edits in place, Kubernetes ConfigMap and Secret swaps (a
// `..data` link renamed over), certificates served to new TLS connections, broken files,
// bursts; with a real Server, a real Reloader and the FileWatcher on its own thread.
#include "proxy/server/file_watcher.hpp"

#include <gtest/gtest.h>
#include <openssl/evp.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>

#include <array>
#include <boost/asio/ssl.hpp>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <thread>

#include "config/load_config.hpp"
#include "proxy/live/reloader.hpp"
#include "proxy/server/server.hpp"
#include "proxy/telemetry/access_log.hpp"
#include "tests/support/eventually.hpp"
#include "tests/support/proxy_fixture.hpp"
#include "tests/support/temp_directory.hpp"
#include "tests/support/test_certificates.hpp"

namespace sluice::test {
namespace {

using namespace std::chrono_literals;
namespace fs = std::filesystem;

/// Longer than a change waits for quiet, however busy: a reload that was to come has come.
constexpr auto kWatchSettled = server::kWatchLongest + 1s;

/// A config whose only route answers `status` itself: which file is in force shows in a GET.
/// `extra`: more top-level keys; `listen`: its value.
std::string answering(unsigned status, const std::string& extra = "watch: true\n",
                      const std::string& listen = "\"127.0.0.1:0\"") {
  return "listen: " + listen + "\nadmin: \"127.0.0.1:0\"\nthreads: 1\nlog: {access: false}\n" +
         extra + "routes: [{name: all, respond: {status: " + std::to_string(status) + "}}]\n";
}

/// A Server on the config file `path` (as the process runs it), with its FileWatcher.
class WatchedProxy {
 public:
  explicit WatchedProxy(const fs::path& path)
      : config_(std::make_shared<const config::ProxyConfig>(config::load_config(path.string()))),
        metrics_(server::Server::threads_for(*config_)),
        live_(std::make_shared<const live::Generation>(config_, nullptr, metrics_)),
        reloader_(path.string(), live_, metrics_),
        server_(live_, metrics_, access_log_, &reloader_, clock_) {
    server_.start();
    watcher_.emplace(reloader_, live_);
  }
  WatchedProxy(const WatchedProxy&) = delete;
  WatchedProxy& operator=(const WatchedProxy&) = delete;
  WatchedProxy(WatchedProxy&&) = delete;
  WatchedProxy& operator=(WatchedProxy&&) = delete;
  ~WatchedProxy() { watcher_.reset(); }

  /// The status a GET / gets on the first (cleartext) listener.
  unsigned status() { return send_request(server_.local_endpoint().port(), get("/")).result_int(); }
  /// Whether GET / answers `status` within 5 s.
  bool answers_soon(unsigned expected) {
    return holds_within(5000ms, [&] { return status() == expected; });
  }
  /// sluice_config_reloads_total{result=`result`}, from /metrics.
  int reloads(const std::string& result) {
    const std::string text = send_request(server_.admin_endpoint().port(), get("/metrics")).body();
    const std::string series = "sluice_config_reloads_total{result=\"" + result + "\"} ";
    const std::size_t at = text.find(series);
    return at == std::string::npos ? -1 : std::stoi(text.substr(at + series.size()));
  }
  /// Whether sluice_config_reloads_total{result=`result`} reaches `count` within 5 s: a reload
  /// publishes its generation first, then counts itself and becomes the last reload.
  bool reloads_reach(const std::string& result, int count) {
    return holds_within(5000ms, [&] { return reloads(result) == count; });
  }
  /// The last reload, once it is one `trigger` asked for (within 5 s); nullopt if none is.
  std::optional<live::LastReload> last_by(const std::string& trigger) {
    std::optional<live::LastReload> last;
    holds_within(5000ms, [&] {
      last = reloader_.last();
      return last.has_value() && last->trigger == trigger;
    });
    return last && last->trigger == trigger ? last : std::nullopt;
  }
  live::Reloader& reloader() { return reloader_; }
  server::Server& server() { return server_; }

 private:
  std::shared_ptr<const config::ProxyConfig> config_;
  telemetry::Metrics metrics_;
  live::LiveConfig live_;
  live::Reloader reloader_;
  limiter::SystemClock clock_;
  telemetry::AccessLog access_log_;
  server::Server server_;
  std::optional<server::FileWatcher> watcher_;
};

/// A directory as the kubelet keeps a ConfigMap or Secret volume: the files in a timestamped
/// directory, `..data` a link to it, and each name a link through `..data`. An update writes a
/// new timestamped directory, renames a new link `..data_tmp` over `..data` and removes the old
/// directory.
class KubernetesVolume {
 public:
  explicit KubernetesVolume(fs::path directory) : directory_(std::move(directory)) {
    fs::create_directories(directory_);
  }

  /// Publishes a new version holding `files` (name → content).
  void publish(const std::map<std::string, std::string>& files) {
    const std::string version = "..2026_11_27_12_00_00." + std::to_string(++versions_);
    fs::create_directory(directory_ / version);
    for (const auto& [name, content] : files) {
      std::ofstream(directory_ / version / name) << content;
    }
    fs::create_directory_symlink(version, directory_ / "..data_tmp");
    fs::rename(directory_ / "..data_tmp", directory_ / "..data");
    for (const auto& [name, content] : files) {
      if (!fs::is_symlink(directory_ / name)) {
        fs::create_symlink(fs::path("..data") / name, directory_ / name);
      }
    }
    if (!previous_.empty()) {
      fs::remove_all(directory_ / previous_);
    }
    previous_ = version;
  }
  fs::path operator/(const std::string& name) const { return directory_ / name; }

 private:
  fs::path directory_;
  int versions_ = 0;
  std::string previous_;
};

/// The SHA-256 fingerprint (lower-case hex, as TestCertificates says it) of the certificate a
/// new TLS connection to 127.0.0.1:`port` is shown.
std::string fingerprint_served_at(unsigned short port, const std::string& ca) {
  net::io_context io;
  net::ssl::context context(net::ssl::context::tls_client);
  context.load_verify_file(ca);
  context.set_verify_mode(net::ssl::verify_peer);
  net::ssl::stream<tcp::socket> stream(io, context);
  stream.next_layer().connect(tcp::endpoint(net::ip::make_address("127.0.0.1"), port));
  stream.handshake(net::ssl::stream_base::client);
  X509* certificate = SSL_get0_peer_certificate(stream.native_handle());
  std::array<unsigned char, EVP_MAX_MD_SIZE> digest{};
  unsigned int length = 0;
  X509_digest(certificate, EVP_sha256(), digest.data(), &length);
  std::string hex;
  for (unsigned int i = 0; i < length; ++i) {
    hex += "0123456789abcdef"[digest[i] >> 4];
    hex += "0123456789abcdef"[digest[i] & 0xf];
  }
  return hex;
}

TEST(FileWatcher, ReloadsAFileEditedInPlace) {
  const TempDirectory directory("sluice-watch");
  const fs::path config = directory.write("proxy.yaml", answering(201));
  WatchedProxy proxy(config);
  ASSERT_EQ(proxy.status(), 201U);

  std::ofstream(config) << answering(202);  // truncated and written: no new file, no rename
  EXPECT_TRUE(proxy.answers_soon(202));
  const std::optional<live::LastReload> last = proxy.last_by("watch");
  ASSERT_TRUE(last.has_value());
  EXPECT_TRUE(last->report.ok);
  EXPECT_TRUE(proxy.reloads_reach("success", 1));
}

TEST(FileWatcher, ReloadsAConfigMapSwap) {
  const TempDirectory directory("sluice-watch");
  KubernetesVolume volume(directory.path() / "config");
  volume.publish({{"proxy.yaml", answering(201)}});
  WatchedProxy proxy(volume / "proxy.yaml");
  ASSERT_EQ(proxy.status(), 201U);

  volume.publish({{"proxy.yaml", answering(202)}});
  EXPECT_TRUE(proxy.answers_soon(202));
  volume.publish({{"proxy.yaml", answering(203)}});  // the directory it was read from is gone
  EXPECT_TRUE(proxy.answers_soon(203));
  EXPECT_TRUE(proxy.reloads_reach("success", 2));
}

TEST(FileWatcher, ServesACertificateSwappedInASecretToNewConnections) {
  const TestCertificates files;
  const TempDirectory directory("sluice-watch");
  const auto read = [](const std::string& path) {
    std::ifstream in(path);
    return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  };
  KubernetesVolume secret(directory.path() / "secret");
  secret.publish({{"tls.crt", read(files.server_cert())}, {"tls.key", read(files.server_key())}});
  const fs::path config = directory.write(
      "proxy.yaml",
      answering(200, "watch: true\n",
                "[{address: \"127.0.0.1:0\", tls: {cert: " + (secret / "tls.crt").string() +
                    ", key: " + (secret / "tls.key").string() + "}}]"));
  WatchedProxy proxy(config);
  const unsigned short port = proxy.server().local_endpoint().port();
  ASSERT_EQ(fingerprint_served_at(port, files.ca_cert()),
            TestCertificates::fingerprint(files.server_cert()));

  secret.publish({{"tls.crt", read(files.server2_cert())}, {"tls.key", read(files.server2_key())}});
  EXPECT_TRUE(holds_within(5000ms, [&] {
    return fingerprint_served_at(port, files.ca_cert()) ==
           TestCertificates::fingerprint(files.server2_cert());
  }));
  EXPECT_TRUE(proxy.reloads_reach("success", 1));  // the certificate and its key: one reload
}

TEST(FileWatcher, KeepsTheConfigInForceWhenTheFileIsBrokenAndReportsWhy) {
  const TempDirectory directory("sluice-watch");
  const fs::path config = directory.write("proxy.yaml", answering(201));
  WatchedProxy proxy(config);

  std::ofstream(config) << answering(201) << "limiters: {a: {algorithm: token_bukket}}\n";
  ASSERT_TRUE(proxy.reloads_reach("failure", 1));
  const std::optional<live::LastReload> last = proxy.last_by("watch");
  ASSERT_TRUE(last.has_value());
  EXPECT_FALSE(last->report.ok);
  ASSERT_FALSE(last->report.errors.empty());
  EXPECT_NE(last->report.errors.front().find("token_bukket"), std::string::npos)
      << last->report.errors.front();
  EXPECT_EQ(proxy.status(), 201U);

  std::ofstream(config) << answering(202);  // fixed: loaded
  EXPECT_TRUE(proxy.answers_soon(202));
  EXPECT_EQ(proxy.reloads("failure"), 1);
}

TEST(FileWatcher, ABurstOfWritesIsOneReload) {
  const TempDirectory directory("sluice-watch");
  const fs::path config = directory.write("proxy.yaml", answering(201));
  WatchedProxy proxy(config);

  for (unsigned i = 0; i < 10; ++i) {  // 10 ms apart: never kWatchQuiet of quiet in between
    std::ofstream(config) << answering(210 + i);
    std::this_thread::sleep_for(10ms);
  }
  EXPECT_TRUE(proxy.answers_soon(219));
  std::this_thread::sleep_for(kWatchSettled);
  EXPECT_EQ(proxy.reloads("success"), 1);
}

TEST(FileWatcher, ChangesThatLeaveTheFilesAsTheyWereDoNotReload) {
  const TempDirectory directory("sluice-watch");
  const fs::path config = directory.write("proxy.yaml", answering(201));
  WatchedProxy proxy(config);

  std::ofstream(config) << answering(201);       // the same bytes again
  directory.write("unrelated.txt", "anything");  // a neighbour
  fs::last_write_time(config, fs::file_time_type::clock::now());
  std::this_thread::sleep_for(kWatchSettled);
  EXPECT_EQ(proxy.reloads("success"), 0);
  EXPECT_EQ(proxy.reloads("failure"), 0);
}

TEST(FileWatcher, WatchesNothingUntilAReloadTurnsWatchOn) {
  const TempDirectory directory("sluice-watch");
  const fs::path config = directory.write("proxy.yaml", answering(201, ""));
  WatchedProxy proxy(config);

  std::ofstream(config) << answering(202, "");
  std::this_thread::sleep_for(kWatchSettled);
  EXPECT_EQ(proxy.status(), 201U);  // watch is false: nothing reloaded
  EXPECT_EQ(proxy.reloads("success"), 0);

  std::ofstream(config) << answering(203);  // watch: true, applied by the next reload (SIGHUP)
  ASSERT_TRUE(proxy.reloader().reload("SIGHUP").ok);
  ASSERT_EQ(proxy.status(), 203U);
  std::this_thread::sleep_for(server::kWatchTick * 2);  // the watcher sees the new generation
  std::ofstream(config) << answering(204);
  EXPECT_TRUE(proxy.answers_soon(204));
  EXPECT_TRUE(proxy.last_by("watch").has_value());
}

}  // namespace
}  // namespace sluice::test
