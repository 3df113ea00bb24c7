#include "proxy/cli/command_line.hpp"

#include <CLI/CLI.hpp>
#include <array>
#include <iostream>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace sluice::cli {
namespace {

constexpr int kUsageError = 2;

/// Help that opens with the command's synopsis as SPEC §1 writes it, rather than CLI11's
/// generic "[OPTIONS]".
class SynopsisFormatter : public CLI::Formatter {
 public:
  explicit SynopsisFormatter(std::string synopsis) : synopsis_(std::move(synopsis)) {}

  std::string make_usage(const CLI::App* /*app*/, std::string /*name*/) const override {
    return get_label("Usage") + ": " + synopsis_ + "\n";
  }

 private:
  std::string synopsis_;
};

CLI::App* add_command(CLI::App& sluice, std::string name, std::string description,
                      std::string synopsis) {
  CLI::App* command = sluice.add_subcommand(std::move(name), std::move(description));
  command->group("Commands");
  command->formatter(std::make_shared<SynopsisFormatter>(std::move(synopsis)));
  return command;
}

void add_config_option(CLI::App& command, std::string& path) {
  command.add_option("-c,--config", path, "the configuration file (default: ./proxy.yaml)")
      ->type_name("FILE");
}

/// The command whose arguments were being read: the one named, or sluice itself.
const CLI::App* command_of(const CLI::App* sluice) {
  const std::vector<CLI::App*> named = sluice->get_subcommands();
  return named.empty() ? sluice : named.front();
}

/// A usage error in a line that names the command, what was wrong and where help is.
std::string usage_error(const CLI::App* sluice, const CLI::Error& error) {
  const CLI::App* command = command_of(sluice);
  const std::string name =
      command == sluice ? sluice->get_name() : sluice->get_name() + " " + command->get_name();
  std::string message = error.what();
  // CLI11 says "The following argument was not expected" for all three of these.
  const std::vector<std::string> extra = command->remaining();
  if (dynamic_cast<const CLI::ExtrasError*>(&error) != nullptr && !extra.empty()) {
    const std::string& first = extra.front();
    if (first.size() > 1 && first.front() == '-') {
      message = "unknown option '" + first + "'";
    } else if (command == sluice) {
      message = "unknown command '" + first + "'";
    } else {
      message = "unexpected argument '" + first + "'";
    }
  }
  return name + ": " + message + "\nRun '" + name + " --help' for usage.\n";
}

/// --format's check: the two log formats replay reads.
std::string input_format_error(const std::string& name) {
  if (name == "jsonl" || name == "combined") {
    return {};
  }
  return "\"" + name + "\" is neither jsonl nor combined";
}

/// `replay` and its options (SPEC §6), bound to `config` (-c) and `arguments` (the rest).
CLI::App* add_replay_command(CLI::App& sluice, std::string& config,
                             replay::ReplayArguments& arguments) {
  CLI::App* replay = add_command(
      sluice, "replay", "what FILE's limiters would have done to recorded requests",
      "sluice replay [-c FILE] [--format jsonl|combined] [--out FILE] [--report FILE.html] "
      "[LOG|-]");
  replay->footer(
      "The requests go through the limiters on a simulated clock: one JSON line per request\n"
      "comes out (standard output or --out), and a summary on standard error.");
  add_config_option(*replay, config);
  replay
      ->add_option_function<std::string>(
          "--format",
          [&arguments](const std::string& name) {
            arguments.format =
                name == "combined" ? replay::InputFormat::combined : replay::InputFormat::jsonl;
          },
          "LOG's format: JSON lines (the default) or combined access log lines")
      ->type_name("jsonl|combined")
      ->check(input_format_error);
  replay->add_option("--out", arguments.output, "where the decisions go (default: standard output)")
      ->type_name("FILE");
  replay->add_option("--report", arguments.report, "also write an HTML report")
      ->type_name("FILE.html");
  replay
      ->add_option("LOG", arguments.input,
                   "the recorded requests: a file, or - for standard input (the default)")
      ->type_name("");
  return replay;
}

/// `help [COMMAND]`: the help of --help, for those who ask for it as a command.
CLI::App* add_help_command(CLI::App& sluice, std::string& topic) {
  CLI::App* help =
      add_command(sluice, "help", "print this help, or COMMAND's", "sluice help [COMMAND]");
  help->add_option("COMMAND", topic, "run, check, health, replay, version or help")
      ->type_name("")
      ->check(
          CLI::IsMember({"run", "check", "health", "replay", "version", "help"}).description(""));
  return help;
}

}  // namespace

std::variant<Invocation, int> parse_command_line(int argc, const char* const* argv) {
  Invocation invocation;
  CLI::App sluice("sluice " SLUICE_VERSION ": an HTTP rate-limiting reverse proxy", "sluice");
  sluice.formatter(std::make_shared<SynopsisFormatter>("sluice [COMMAND] [-c FILE]"));
  sluice.failure_message(usage_error);
  sluice.set_help_flag("-h,--help", "print this help and exit");
  sluice.set_version_flag("--version", "sluice " SLUICE_VERSION, "print the version and exit");
  sluice.require_subcommand(0, 1);
  // An option given twice takes its last value, as it always has; commands inherit this.
  sluice.option_defaults()->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  // `sluice -c FILE` runs the proxy. Every -c writes the same FILE, so `sluice -c FILE check`
  // checks FILE.
  add_config_option(sluice, invocation.config);

  CLI::App* run =
      add_command(sluice, "run", "start the proxy (the default command)", "sluice [run] [-c FILE]");
  CLI::App* check = add_command(sluice, "check",
                                "validate FILE; print its routes and limiters (exit 1 on errors)",
                                "sluice check [-c FILE]");
  CLI::App* health = add_command(
      sluice, "health", "ask the running proxy's admin port for /healthz (exit 0 if healthy)",
      "sluice health [-c FILE]");
  for (CLI::App* command : {run, check, health}) {
    add_config_option(*command, invocation.config);
  }
  CLI::App* replay = add_replay_command(sluice, invocation.config, invocation.replay);
  CLI::App* version = add_command(sluice, "version", "print the version", "sluice version");
  std::string topic;
  CLI::App* help = add_help_command(sluice, topic);
  // Set last: a command inherits its parent's footer when it is added.
  sluice.footer("With no COMMAND, sluice runs the proxy. Every command takes --help.");

  try {
    sluice.parse(argc, argv);
  } catch (const CLI::ParseError& error) {
    // Help and the version come back as "errors" with exit code 0; they are printed here too.
    return sluice.exit(error) == 0 ? 0 : kUsageError;
  }

  if (help->parsed()) {
    const CLI::App* explained = topic.empty() ? &sluice : sluice.get_subcommand(topic);
    std::cout << explained->get_formatter()->make_help(explained, "", CLI::AppFormatMode::Normal);
    return 0;
  }
  const std::array<std::pair<const CLI::App*, Command>, 5> commands{{{run, Command::run},
                                                                     {check, Command::check},
                                                                     {health, Command::health},
                                                                     {replay, Command::replay},
                                                                     {version, Command::version}}};
  for (const auto& [app, command] : commands) {
    if (app->parsed()) {
      invocation.command = command;
    }
  }
  invocation.replay.config = invocation.config;
  return invocation;
}

}  // namespace sluice::cli
