// sluice: command line (SPEC §1). Exit codes: 0 success, 1 configuration or runtime error,
// 2 usage error.
#include <iostream>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "config/load_config.hpp"
#include "proxy/check_command.hpp"
#include "proxy/engine_demo.hpp"
#include "proxy/replay/replay_command.hpp"

namespace {

constexpr std::string_view kUsage = R"(usage:
  sluice [run] [-c FILE]     start the proxy (default FILE: ./proxy.yaml)
  sluice check [-c FILE]     validate; print routes and limiters
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

int run(std::span<const std::string_view> args) {
  int exit_code = 0;
  const std::optional<sluice::config::ProxyConfig> config = config_from(args, exit_code);
  if (!config) {
    return exit_code;
  }
  std::cout << "sluice " << SLUICE_VERSION << "\n\n";
  sluice::proxy::print_config_summary(*config, std::cout);
  std::cout << "\nNot built yet: the HTTP proxy and the Redis store, so this config is checked\n"
               "but not served. Built and tested: the limiter engine, the config loader, the\n"
               "request pipeline and `sluice replay` (try it on a log of yours).\n\n";
  sluice::proxy::print_engine_demo(std::cout);
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
  std::cerr << "sluice: unknown command '" << command << "'\n" << kUsage;
  return kUsageError;
}
