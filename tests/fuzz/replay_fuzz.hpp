#pragma once

// What the two replay targets share: a log file, in either format, through `sluice replay` as
// the command runs it on the fixed configuration (fuzz_config.hpp).

#include <stdio.h>  // fmemopen

#include <boost/json/parse.hpp>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <string_view>

#include "proxy/replay/line_reader.hpp"
#include "proxy/replay/replay_record.hpp"
#include "proxy/replay/replayer.hpp"
#include "proxy/replay/report_html.hpp"
#include "tests/fuzz/fuzz_config.hpp"

namespace sluice::fuzz {

// Project symbols (one place to re-qualify them).
using ::sluice::replay::InputFormat;
using ::sluice::replay::LineReader;
using ::sluice::replay::parse_combined_line;
using ::sluice::replay::parse_json_line;
using ::sluice::replay::Replayer;
using ::sluice::replay::ReplayRecord;
using ::sluice::replay::write_html_report;

inline void require(bool condition, const char* what) {
  if (!condition) {
    std::fprintf(stderr, "replay fuzz target: %s\n", what);
    std::abort();
  }
}

/// A record's text must lie in the line or in the record's scratch buffer (views into a scratch
/// buffer that moved would dangle), unless it is one of the parsers' own constants.
inline void check_text(std::string_view text, std::string_view line, const std::string& scratch) {
  const auto within = [&](std::string_view area) {
    return !text.empty() && text.data() >= area.data() &&
           text.data() + text.size() <= area.data() + area.size();
  };
  if (within(line) || within(scratch)) {
    return;
  }
  require(text.empty() || text == "0.0.0.0" || text == "GET" || text == "/" || text == "Referer" ||
              text == "User-Agent",
          "a record's text outside its line and its scratch buffer");
}

inline void check_record(const ReplayRecord& record, std::string_view line) {
  require(record.header_count <= record.headers.size(), "too many headers");
  for (const std::string_view text : {record.ip, record.method, record.path, record.host}) {
    check_text(text, line, record.scratch);
  }
  for (std::size_t i = 0; i < record.header_count; ++i) {
    check_text(record.headers[i].name, line, record.scratch);
    check_text(record.headers[i].value, line, record.scratch);
  }
  require(record.t >= 0 && record.duration >= 0, "a negative time or duration");
  require(!record.cost || *record.cost >= 1, "a cost below 1");
}

/// Replays `bytes` as a log in `format`: read by the command's line reader (in small blocks, so
/// that lines outgrow them), each line parsed on its own and checked, the replayer's output
/// lines valid JSON, then the summary and the HTML report written.
inline void replay_log(std::string_view bytes, InputFormat format) {
  if (bytes.empty()) {
    return;  // fmemopen needs a byte
  }
  const std::unique_ptr<std::FILE, int (*)(std::FILE*)> input(
      fmemopen(const_cast<char*>(bytes.data()), bytes.size(), "r"), &std::fclose);
  require(input != nullptr, "fmemopen failed");
  LineReader lines(input.get(), 64);
  Replayer replayer(fuzz_config(), format);
  ReplayRecord record;
  std::string out;
  std::string_view line;
  while (lines.next(line)) {
    const std::optional<std::string> problem = format == InputFormat::jsonl
                                                   ? parse_json_line(line, record)
                                                   : parse_combined_line(line, record);
    if (!problem) {
      check_record(record, line);
    }
    out.clear();
    replayer.feed(line, out);
    if (!out.empty()) {
      boost::json::error_code ec;
      (void)boost::json::parse(out, ec);
      require(!ec, "an output line that is not JSON");
    }
  }
  std::ostringstream text;
  replayer.summary().print(text);
  write_html_report(replayer.summary(), "fuzz.yaml", "fuzz.log", text);
}

}  // namespace sluice::fuzz
