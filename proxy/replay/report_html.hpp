#pragma once

#include <ostream>
#include <string_view>

#include "proxy/replay/replay_summary.hpp"

namespace sluice::replay {

/// Writes the replay report (SPEC §6 `--report`): one self-contained HTML page with inline SVG
/// charts of allowed / delayed / limited requests over time per route, the totals, and the most
/// limited keys. Nothing is fetched from elsewhere.
void write_html_report(const ReplaySummary& summary, std::string_view config_file,
                       std::string_view input_name, std::ostream& out);

}  // namespace sluice::replay
