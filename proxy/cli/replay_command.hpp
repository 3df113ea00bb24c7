#pragma once

#include <string>

#include "proxy/replay/replayer.hpp"

namespace sluice::replay {

/// What `sluice replay` was asked to do (SPEC §6); the command line fills it in.
struct ReplayArguments {
  std::string config = "proxy.yaml";
  InputFormat format = InputFormat::jsonl;
  std::string input = "-";   // the recorded requests: a file, or "-" for standard input
  std::string output = "-";  // where the decisions go: a file, or "-" for standard output
  std::string report;        // an HTML report to write too, when not empty
};

/// `sluice replay [-c FILE] [--format jsonl|combined] [--out FILE] [--report FILE.html] [LOG|-]`.
/// Returns the exit code: 0, or 1 (config or I/O error).
int run_replay_command(const ReplayArguments& arguments);

}  // namespace sluice::replay
