#pragma once

#include <string>
#include <variant>

#include "proxy/cli/replay_command.hpp"

namespace sluice::cli {

/// The commands of SPEC §1.
enum class Command { run, check, health, replay, version };

/// What `sluice`'s arguments ask for.
struct Invocation {
  Command command = Command::run;     // `sluice` with no command runs the proxy
  std::string config = "proxy.yaml";  // -c FILE
  replay::ReplayArguments replay;     // replay's options, its config included
};

/// Parses `sluice`'s arguments. Returns what they ask for, or the exit code when there is nothing
/// more to do: 0 once help or the version is printed, 2 once a usage error is.
std::variant<Invocation, int> parse_command_line(int argc, const char* const* argv);

}  // namespace sluice::cli
