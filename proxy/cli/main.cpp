// sluice: command line (SPEC §1). Exit codes: 0 success, 1 configuration or runtime error,
// 2 usage error.
#include <boost/asio/io_context.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <csignal>
#include <iostream>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "config/load_config.hpp"
#include "limiter/clock.hpp"
#include "limiter/validate.hpp"
#include "proxy/cli/check_command.hpp"
#include "proxy/cli/health_command.hpp"
#include "proxy/cli/replay_command.hpp"
#include "proxy/live/generation.hpp"
#include "proxy/live/reloader.hpp"
#include "proxy/server/server.hpp"
#include "proxy/telemetry/access_log.hpp"
#include "proxy/telemetry/metrics.hpp"

namespace {

constexpr std::string_view kUsage = R"(usage:
  sluice [run] [-c FILE]     start the proxy (default FILE: ./proxy.yaml)
  sluice check [-c FILE]     validate; print routes and limiters
  sluice health [-c FILE]    ask the running proxy's admin port for /healthz; exit 0 if healthy
  sluice replay [-c FILE] [--format jsonl|combined] [--out FILE] [--report FILE.html] [LOG|-]
  sluice version
Every command takes --help.
)";

constexpr int kUsageError = 2;
constexpr int kRuntimeError = 1;

bool wants_help(std::span<const std::string_view> args) {
  for (const std::string_view arg : args) {
    if (arg == "--help" || arg == "-h") {
      return true;
    }
  }
  return false;
}

/// The -c FILE option; "" and a usage message on error.
std::string_view config_path(std::span<const std::string_view> args, bool& ok) {
  std::string_view path = "proxy.yaml";
  ok = true;
  for (std::size_t i = 0; i < args.size(); ++i) {
    if (args[i] == "-c" || args[i] == "--config") {
      if (i + 1 == args.size()) {
        std::cerr << "sluice: " << args[i] << " needs a FILE\n" << kUsage;
        ok = false;
        return {};
      }
      path = args[++i];
    } else {
      std::cerr << "sluice: unexpected argument '" << args[i] << "'\n" << kUsage;
      ok = false;
      return {};
    }
  }
  return path;
}

/// Loads the config, printing every problem; nullopt when it cannot be used.
std::optional<sluice::config::ProxyConfig> load(std::string_view path) {
  try {
    return sluice::config::load_config(std::string(path));
  } catch (const sluice::config::ConfigError& error) {
    for (const std::string& line : error.lines()) {
      std::cerr << line << '\n';
    }
    std::cerr << error.what() << '\n';
    return std::nullopt;
  }
}

/// Loads the config that -c names (default ./proxy.yaml); on failure sets the exit code.
std::optional<sluice::config::ProxyConfig> config_from(std::span<const std::string_view> args,
                                                       int& exit_code) {
  bool ok = false;
  const std::string_view path = config_path(args, ok);
  if (!ok) {
    exit_code = kUsageError;
    return std::nullopt;
  }
  std::optional<sluice::config::ProxyConfig> config = load(path);
  if (!config) {
    exit_code = kRuntimeError;
  }
  return config;
}

/// Drops idle limiter keys every few seconds, so their memory goes back even when quiet.
void collect_idle_keys(boost::asio::steady_timer& timer, const sluice::proxy::LiveConfig& live,
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
void reload_on_hangup(boost::asio::signal_set& hangup, sluice::proxy::Reloader& reloader) {
  hangup.async_wait([&hangup, &reloader](const boost::system::error_code& ec, int) {
    if (!ec) {
      sluice::proxy::log_reload(reloader.reload(), "SIGHUP");
      reload_on_hangup(hangup, reloader);
    }
  });
}

int run(std::span<const std::string_view> args) {
  int exit_code = 0;
  bool usage_ok = false;
  const std::string path(config_path(args, usage_ok));
  std::optional<sluice::config::ProxyConfig> loaded = config_from(args, exit_code);
  if (!loaded) {
    return exit_code;
  }
  const auto config = std::make_shared<const sluice::config::ProxyConfig>(std::move(*loaded));
  const sluice::limiter::SystemClock clock;
  sluice::proxy::Metrics metrics(sluice::proxy::Server::threads_for(*config));
  sluice::proxy::LiveConfig live(
      std::make_shared<const sluice::proxy::Generation>(config, nullptr, metrics));
  sluice::proxy::AccessLog access_log;
  sluice::proxy::Reloader reloader(path, live, metrics);
  sluice::proxy::Server server(live, metrics, access_log, &reloader, clock);
  sluice::proxy::apply_log_level(config->log.level);
  // Signals are caught from before the proxy listens: one that arrives as it starts is not lost.
  boost::asio::io_context control;
  boost::asio::signal_set signals(control, SIGTERM, SIGINT);
  boost::asio::signal_set hangup(control, SIGHUP);
  try {
    server.start();
  } catch (const boost::system::system_error& error) {
    std::cerr << "sluice: cannot listen on " << config->listen.host << ':' << config->listen.port
              << ": " << error.code().message() << '\n';
    return kRuntimeError;
  } catch (const sluice::proxy::StoreError& error) {
    std::cerr << "sluice: " << error.what() << '\n';
    return kRuntimeError;
  }
  std::cout << "sluice " << SLUICE_VERSION << " listening on " << server.local_endpoint() << " ("
            << config->file << ", " << config->routes.size() << " routes, "
            << config->limiters.size() << " limiters)" << std::endl;

  signals.async_wait([&](const boost::system::error_code&, int signal) {
    std::cout << "sluice: " << (signal == SIGTERM ? "SIGTERM" : "SIGINT") << ": draining for up to "
              << sluice::limiter::format_duration(live.current()->config->timeouts.drain)
              << std::endl;
    control.stop();
  });
  reload_on_hangup(hangup, reloader);
  boost::asio::steady_timer collector(control);
  collect_idle_keys(collector, live, clock);
  control.run();
  server.stop(live.current()->config->timeouts.drain);
  std::cout << "sluice: stopped" << std::endl;
  return 0;
}

int check(std::span<const std::string_view> args) {
  int exit_code = 0;
  const std::optional<sluice::config::ProxyConfig> config = config_from(args, exit_code);
  if (!config) {
    return exit_code;
  }
  sluice::proxy::print_config_summary(*config, std::cout);
  return 0;
}

/// How long `sluice health` waits for the admin port (a HEALTHCHECK has its own timeout too).
constexpr std::chrono::seconds kHealthTimeout{2};

int health(std::span<const std::string_view> args) {
  int exit_code = 0;
  const std::optional<sluice::config::ProxyConfig> config = config_from(args, exit_code);
  if (!config) {
    return exit_code;
  }
  return sluice::proxy::check_health(*config, kHealthTimeout, std::cerr) ? 0 : kRuntimeError;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string_view> all(argv + 1, argv + argc);
  std::span<const std::string_view> args(all);
  std::string_view command = "run";
  if (!args.empty() && !args.front().starts_with('-')) {
    command = args.front();
    args = args.subspan(1);
  }
  if (command == "replay") {  // it has its own --help
    return sluice::replay::run_replay_command(args);
  }
  if (command == "help" || wants_help(args)) {
    std::cout << kUsage;
    return 0;
  }
  if (command == "version") {
    std::cout << "sluice " << SLUICE_VERSION << '\n';
    return 0;
  }
  if (command == "run") {
    return run(args);
  }
  if (command == "check") {
    return check(args);
  }
  if (command == "health") {
    return health(args);
  }
  std::cerr << "sluice: unknown command '" << command << "'\n" << kUsage;
  return kUsageError;
}
