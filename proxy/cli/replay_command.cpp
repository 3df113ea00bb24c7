#include "proxy/cli/replay_command.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <optional>
#include <string>

#include "config/load_config.hpp"
#include "proxy/replay/line_reader.hpp"
#include "proxy/replay/replayer.hpp"
#include "proxy/replay/report_html.hpp"

namespace sluice::replay {
namespace {

constexpr std::string_view kUsage =
    "usage: sluice replay [-c FILE] [--format jsonl|combined] [--out FILE] [--report FILE.html] "
    "[LOG|-]\n"
    "Runs recorded requests through FILE's limiters with a simulated clock and prints what\n"
    "would have happened: one JSON line per request (stdout or --out), a summary on stderr.\n";

struct Arguments {
  std::string config = "proxy.yaml";
  InputFormat format = InputFormat::jsonl;
  std::string input = "-";
  std::string output = "-";
  std::string report;
};

std::optional<Arguments> parse(std::span<const std::string_view> args) {
  Arguments parsed;
  bool have_input = false;
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string_view arg = args[i];
    const auto value = [&]() -> std::optional<std::string> {
      if (i + 1 == args.size()) {
        std::cerr << "sluice replay: " << arg << " needs a value\n" << kUsage;
        return std::nullopt;
      }
      return std::string(args[++i]);
    };
    if (arg == "-c" || arg == "--config") {
      auto v = value();
      if (!v) {
        return std::nullopt;
      }
      parsed.config = *v;
    } else if (arg == "--format") {
      auto v = value();
      if (!v) {
        return std::nullopt;
      }
      if (*v == "jsonl") {
        parsed.format = InputFormat::jsonl;
      } else if (*v == "combined") {
        parsed.format = InputFormat::combined;
      } else {
        std::cerr << "sluice replay: --format is jsonl or combined, not \"" << *v << "\"\n";
        return std::nullopt;
      }
    } else if (arg == "--out") {
      auto v = value();
      if (!v) {
        return std::nullopt;
      }
      parsed.output = *v;
    } else if (arg == "--report") {
      auto v = value();
      if (!v) {
        return std::nullopt;
      }
      parsed.report = *v;
    } else if ((arg.starts_with('-') && arg != "-") || have_input) {
      std::cerr << "sluice replay: unexpected argument '" << arg << "'\n" << kUsage;
      return std::nullopt;
    } else {
      parsed.input = std::string(arg);
      have_input = true;
    }
  }
  return parsed;
}

/// Draws "[#####.....]  45%  1234567 lines" on a terminal, at most ten times a second.
class Progress {
 public:
  Progress(bool enabled, std::size_t total_bytes) : enabled_(enabled), total_(total_bytes) {}
  void update(std::size_t bytes, std::uint64_t lines) {
    if (!enabled_ || (lines & 0xFFFF) != 0) {
      return;
    }
    const auto now = std::chrono::steady_clock::now();
    if (now - drawn_ < std::chrono::milliseconds(100)) {
      return;
    }
    drawn_ = now;
    const std::size_t percent =
        total_ == 0 ? 100 : std::min<std::size_t>(100, bytes * 100 / total_);
    const std::string bar = std::string(percent / 4, '#') + std::string(25 - percent / 4, '.');
    std::fprintf(stderr, "\r[%s] %3zu%%  %llu lines", bar.c_str(), percent,
                 static_cast<unsigned long long>(lines));
  }
  void clear() {
    if (enabled_) {
      std::fprintf(stderr, "\r%60s\r", "");
    }
  }

 private:
  bool enabled_;
  std::size_t total_;
  std::chrono::steady_clock::time_point drawn_{};
};

}  // namespace

int run_replay_command(std::span<const std::string_view> args) {
  for (const std::string_view arg : args) {
    if (arg == "--help" || arg == "-h") {
      std::cout << kUsage;
      return 0;
    }
  }
  const std::optional<Arguments> arguments = parse(args);
  if (!arguments) {
    return 2;
  }
  std::optional<config::ProxyConfig> config;
  try {
    config = config::load_config(arguments->config);
  } catch (const config::ConfigError& error) {
    for (const std::string& line : error.lines()) {
      std::cerr << line << '\n';
    }
    std::cerr << error.what() << '\n';
    return 1;
  }
  std::FILE* input = arguments->input == "-" ? stdin : std::fopen(arguments->input.c_str(), "rb");
  if (input == nullptr) {
    std::cerr << "sluice replay: cannot read " << arguments->input << '\n';
    return 1;
  }
  std::FILE* output =
      arguments->output == "-" ? stdout : std::fopen(arguments->output.c_str(), "wb");
  if (output == nullptr) {
    std::cerr << "sluice replay: cannot write " << arguments->output << '\n';
    return 1;
  }
  struct stat info {};
  const bool regular_file =
      input != stdin && fstat(fileno(input), &info) == 0 && S_ISREG(info.st_mode);
  Progress progress(regular_file && isatty(STDERR_FILENO) == 1,
                    regular_file ? static_cast<std::size_t>(info.st_size) : 0);

  const auto started = std::chrono::steady_clock::now();
  Replayer replayer(*config, arguments->format);
  LineReader reader(input);
  std::uint64_t lines = 0;
  {
    OutputBuffer out(output);
    std::string_view line;
    while (reader.next(line)) {
      replayer.feed(line, out.text());
      out.maybe_flush();
      progress.update(reader.bytes_read(), ++lines);
    }
  }
  progress.clear();
  const double elapsed =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  if (input != stdin) {
    std::fclose(input);
  }
  if (output != stdout && std::fclose(output) != 0) {
    std::cerr << "sluice replay: cannot write " << arguments->output << '\n';
    return 1;
  }

  std::cerr << "replayed " << replayer.requests() << " requests from "
            << (arguments->input == "-" ? "stdin" : arguments->input) << " in " << elapsed
            << " s\n";
  if (replayer.out_of_order() > 0) {
    std::cerr << replayer.out_of_order()
              << " requests were earlier than the one before; each was decided at the latest "
                 "time seen\n";
  }
  std::cerr << '\n';
  replayer.summary().print(std::cerr);
  if (!arguments->report.empty()) {
    std::ofstream report(arguments->report);
    write_html_report(replayer.summary(), arguments->config,
                      arguments->input == "-" ? "stdin" : arguments->input, report);
    if (!report) {
      std::cerr << "sluice replay: cannot write " << arguments->report << '\n';
      return 1;
    }
    std::cerr << "\nreport: " << arguments->report << '\n';
  }
  return 0;
}

}  // namespace sluice::replay
