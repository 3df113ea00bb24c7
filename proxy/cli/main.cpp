// sluice: the commands of SPEC §1, as the command line (command_line.hpp) names them. Exit codes:
// 0 success, 1 configuration or runtime error, 2 usage error.
#include <boost/asio/io_context.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <csignal>
#include <iostream>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "config/load_config.hpp"
#include "limiter/clock.hpp"
#include "limiter/validate.hpp"
#include "proxy/cli/check_command.hpp"
#include "proxy/cli/command_line.hpp"
#include "proxy/cli/health_command.hpp"
#include "proxy/cli/replay_command.hpp"
#include "proxy/http/jwks_client.hpp"
#include "proxy/live/generation.hpp"
#include "proxy/live/reloader.hpp"
#include "proxy/pipeline/identity.hpp"
#include "proxy/server/file_watcher.hpp"
#include "proxy/server/server.hpp"
#include "proxy/telemetry/access_log.hpp"
#include "proxy/telemetry/metrics.hpp"
#include "proxy/tls/contexts.hpp"

namespace {

constexpr int kRuntimeError = 1;

/// Whether loading a config also reads the certificates it names (a command that serves or
/// checks does; `health` only asks the admin port).
enum class Certificates { read, skip };

/// Loads the config, printing every problem; nullopt when it cannot be used. What is worth a
/// warning only goes to `warnings` when given (serving logs it as the configuration starts).
std::optional<sluice::config::ProxyConfig> load(std::string_view path,
                                                Certificates certificates = Certificates::read,
                                                std::vector<std::string>* warnings = nullptr) {
  try {
    sluice::config::ProxyConfig config = sluice::config::load_config(std::string(path));
    if (certificates == Certificates::read) {
      // Throws ConfigError naming the file that fails.
      const auto contexts = sluice::tls::make_contexts(config);
      if (warnings != nullptr) {
        *warnings = contexts->warnings;
      }
      sluice::pipeline::Identity(config, nullptr);  // reads the JWT providers' key files
    }
    return config;
  } catch (const sluice::config::ConfigError& error) {
    for (const std::string& line : error.lines()) {
      std::cerr << line << '\n';
    }
    std::cerr << error.what() << '\n';
    return std::nullopt;
  }
}

/// Drops idle limiter keys every few seconds, so their memory goes back even when quiet.
void collect_idle_keys(boost::asio::steady_timer& timer, const sluice::live::LiveConfig& live,
                       const sluice::limiter::Clock& clock) {
  timer.expires_after(std::chrono::seconds(10));
  timer.async_wait([&timer, &live, &clock](const boost::system::error_code& ec) {
    if (!ec) {
      live.current()->pipeline.collect_idle(clock.now());
      collect_idle_keys(timer, live, clock);
    }
  });
}

/// SIGHUP: reload, then wait for the next one.
void reload_on_hangup(boost::asio::signal_set& hangup, sluice::live::Reloader& reloader) {
  hangup.async_wait([&hangup, &reloader](const boost::system::error_code& ec, int) {
    if (!ec) {
      reloader.reload("SIGHUP");
      reload_on_hangup(hangup, reloader);
    }
  });
}

int run(const std::string& path) {
  std::optional<sluice::config::ProxyConfig> loaded = load(path);
  if (!loaded) {
    return kRuntimeError;
  }
  const auto config = std::make_shared<const sluice::config::ProxyConfig>(std::move(*loaded));
  const sluice::limiter::SystemClock clock;
  sluice::telemetry::Metrics metrics(sluice::server::Server::threads_for(*config));
  std::shared_ptr<const sluice::live::Generation> first;
  try {  // key sets named by URL are fetched here: no key set, no start (SPEC §8)
    first = std::make_shared<const sluice::live::Generation>(config, nullptr, metrics,
                                                             sluice::http::blocking_jwks_fetch());
  } catch (const sluice::config::ConfigError& error) {
    for (const std::string& line : error.lines()) {
      std::cerr << line << '\n';
    }
    return kRuntimeError;
  }
  sluice::live::LiveConfig live(std::move(first));
  sluice::telemetry::AccessLog access_log;
  sluice::live::Reloader reloader(path, live, metrics, sluice::http::blocking_jwks_fetch());
  sluice::server::Server server(live, metrics, access_log, &reloader, clock);
  sluice::live::apply_log_level(config->log.level);
  // Signals are caught from before the proxy listens: one that arrives as it starts is not lost.
  boost::asio::io_context control;
  boost::asio::signal_set signals(control, SIGTERM, SIGINT);
  boost::asio::signal_set hangup(control, SIGHUP);
  try {
    server.start();
  } catch (const sluice::server::ListenError& error) {
    std::cerr << "sluice: cannot listen on " << error.what() << '\n';
    return kRuntimeError;
  } catch (const sluice::store::StoreError& error) {
    std::cerr << "sluice: " << error.what() << '\n';
    return kRuntimeError;
  }
  std::cout << "sluice " << SLUICE_VERSION << " listening on " << server.listening() << " ("
            << config->file << ", " << config->routes.size() << " routes, "
            << config->limiters.size() << " limiters)" << std::endl;

  signals.async_wait([&](const boost::system::error_code&, int signal) {
    std::cout << "sluice: " << (signal == SIGTERM ? "SIGTERM" : "SIGINT") << ": draining for up to "
              << sluice::limiter::format_duration(live.current()->config->timeouts.drain)
              << std::endl;
    control.stop();
  });
  reload_on_hangup(hangup, reloader);
  // Always there: it watches nothing until a configuration in force says `watch: true`.
  std::optional<sluice::server::FileWatcher> watcher(std::in_place, reloader, live);
  boost::asio::steady_timer collector(control);
  collect_idle_keys(collector, live, clock);
  control.run();
  watcher.reset();  // no reload while draining
  server.stop(live.current()->config->timeouts.drain);
  std::cout << "sluice: stopped" << std::endl;
  return 0;
}

int check(const std::string& path) {
  std::vector<std::string> warnings;
  const std::optional<sluice::config::ProxyConfig> config =
      load(path, Certificates::read, &warnings);
  if (!config) {
    return kRuntimeError;
  }
  for (const std::string& warning : warnings) {
    std::cerr << "warning: " << warning << '\n';
  }
  sluice::cli::print_config_summary(*config, std::cout);
  return 0;
}

/// How long `sluice health` waits for the admin port (a HEALTHCHECK has its own timeout too).
constexpr std::chrono::seconds kHealthTimeout{2};

int health(const std::string& path) {
  const std::optional<sluice::config::ProxyConfig> config = load(path, Certificates::skip);
  if (!config) {
    return kRuntimeError;
  }
  return sluice::cli::check_health(*config, kHealthTimeout, std::cerr) ? 0 : kRuntimeError;
}

}  // namespace

int main(int argc, char** argv) {
  const std::variant<sluice::cli::Invocation, int> parsed =
      sluice::cli::parse_command_line(argc, argv);
  if (const int* exit_code = std::get_if<int>(&parsed)) {
    return *exit_code;
  }
  const sluice::cli::Invocation& invocation = std::get<sluice::cli::Invocation>(parsed);
  switch (invocation.command) {
    case sluice::cli::Command::run:
      return run(invocation.config);
    case sluice::cli::Command::check:
      return check(invocation.config);
    case sluice::cli::Command::health:
      return health(invocation.config);
    case sluice::cli::Command::replay:
      return sluice::replay::run_replay_command(invocation.replay);
    case sluice::cli::Command::version:
      std::cout << "sluice " << SLUICE_VERSION << '\n';
      return 0;
  }
  return kRuntimeError;
}
