#pragma once

#include <span>
#include <string_view>

namespace sluice::replay {

/// `sluice replay [-c FILE] [--format jsonl|combined] [--out FILE] [--report FILE.html] [LOG|-]`
/// (SPEC §6). Returns the exit code: 0, 1 (config or I/O error), 2 (usage).
int run_replay_command(std::span<const std::string_view> args);

}  // namespace sluice::replay
