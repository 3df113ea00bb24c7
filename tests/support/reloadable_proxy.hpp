#pragma once
// A Server whose configuration lives in a file, so that it can be reloaded (by the Reloader, as
// SIGHUP and POST /reload do), in front of a real TestUpstream.

#include <unistd.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>

#include "config/load_config.hpp"
#include "proxy/live/reloader.hpp"
#include "proxy/server/server.hpp"
#include "proxy/telemetry/access_log.hpp"
#include "tests/support/proxy_fixture.hpp"
#include "tests/support/test_upstream.hpp"

namespace sluice::test {

class ReloadableProxy {
 public:
  /// One cleartext listener and the admin port, on ports the system picks.
  static constexpr std::string_view kCleartext =
      "listen: \"127.0.0.1:0\"\nadmin: \"127.0.0.1:0\"\nthreads: 2\nlog: {access: false}\n";

  /// The file holds `head`, then the TestUpstream as the upstream (unless `body` names one of
  /// its own), then `body`.
  explicit ReloadableProxy(const std::string& body, std::string_view head = kCleartext)
      : path_(std::filesystem::temp_directory_path() /
              ("sluice-reloadable-" + std::to_string(::getpid()) + "-" +
               std::to_string(counter_++) + ".yaml")) {
    write(body, head);
    auto config = std::make_shared<const config::ProxyConfig>(config::load_config(path_.string()));
    metrics_ = std::make_unique<telemetry::Metrics>(server::Server::threads_for(*config));
    live_ = std::make_unique<live::LiveConfig>(
        std::make_shared<const live::Generation>(config, nullptr, *metrics_));
    reloader_ = std::make_unique<live::Reloader>(path_.string(), *live_, *metrics_);
    server_ =
        std::make_unique<server::Server>(*live_, *metrics_, access_log_, reloader_.get(), clock_);
    server_->start();
  }
  ReloadableProxy(const ReloadableProxy&) = delete;
  ReloadableProxy& operator=(const ReloadableProxy&) = delete;
  ReloadableProxy(ReloadableProxy&&) = delete;
  ReloadableProxy& operator=(ReloadableProxy&&) = delete;
  ~ReloadableProxy() {
    server_.reset();
    std::filesystem::remove(path_);
  }

  /// Rewrites the file with a new `body` (and `head`, when one is given); nothing is reloaded.
  void write(const std::string& body, std::string_view head = {}) {
    if (!head.empty()) {
      head_ = head;
    }
    const bool own_upstream =
        body.starts_with("upstream:") || body.find("\nupstream:") != std::string::npos;
    std::ofstream file(path_);
    file << head_;
    if (!own_upstream) {
      file << "upstream: \"http://127.0.0.1:" << upstream_.port() << "\"\n";
    }
    file << body << '\n';
  }
  /// Reloads the file, as SIGHUP does.
  live::ReloadReport reload() { return reloader_->reload("SIGHUP"); }
  const live::Reloader& reloader() const { return *reloader_; }

  http::response<http::string_body> send(http::request<http::string_body> request,
                                         bool admin = false) {
    return send_request(admin ? admin_port() : port(), std::move(request));
  }
  unsigned short port() const { return server_->local_endpoint().port(); }
  unsigned short admin_port() const { return server_->admin_endpoint().port(); }
  server::Server& server() { return *server_; }
  TestUpstream& upstream() { return upstream_; }

  /// /metrics once it shows `settled`: a request is counted just after its response is sent,
  /// so a scrape right after the client has the response may come first. Up to 5 s.
  std::string metrics_once(const std::string& settled) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    std::string body;
    do {
      body = send(get("/metrics"), true).body();
    } while (body.find(settled) == std::string::npos &&
             std::chrono::steady_clock::now() < deadline);
    return body;
  }

 private:
  static inline std::atomic<int> counter_{0};
  std::filesystem::path path_;
  std::string head_;
  TestUpstream upstream_;
  limiter::SystemClock clock_;
  std::unique_ptr<telemetry::Metrics> metrics_;
  std::unique_ptr<live::LiveConfig> live_;
  std::unique_ptr<live::Reloader> reloader_;
  telemetry::AccessLog access_log_;
  std::unique_ptr<server::Server> server_;
};

}  // namespace sluice::test
