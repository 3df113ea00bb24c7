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

int run_replay_command(const ReplayArguments& arguments) {
  std::optional<config::ProxyConfig> config;
  std::optional<Replayer> replayer;
  try {
    config = config::load_config(arguments.config);
    // Replay runs offline: a key set is read from a file, never fetched.
    for (const config::JwtProviderConfig& provider : config->jwt_providers) {
      if (!provider.jwks_url.empty()) {
        throw config::ConfigError(
            config->file, {{provider.jwks_at, "auth.jwt." + provider.name +
                                                  ".jwks.url: replay does not fetch key sets; "
                                                  "give the same keys as jwks: {file} or keys"}});
      }
    }
    replayer.emplace(*config, arguments.format);  // reads the providers' key files
  } catch (const config::ConfigError& error) {
    for (const std::string& line : error.lines()) {
      std::cerr << line << '\n';
    }
    std::cerr << error.what() << '\n';
    return 1;
  }
  std::FILE* input = arguments.input == "-" ? stdin : std::fopen(arguments.input.c_str(), "rb");
  if (input == nullptr) {
    std::cerr << "sluice replay: cannot read " << arguments.input << '\n';
    return 1;
  }
  std::FILE* output = arguments.output == "-" ? stdout : std::fopen(arguments.output.c_str(), "wb");
  if (output == nullptr) {
    std::cerr << "sluice replay: cannot write " << arguments.output << '\n';
    return 1;
  }
  struct stat info {};
  const bool regular_file =
      input != stdin && fstat(fileno(input), &info) == 0 && S_ISREG(info.st_mode);
  Progress progress(regular_file && isatty(STDERR_FILENO) == 1,
                    regular_file ? static_cast<std::size_t>(info.st_size) : 0);

  const auto started = std::chrono::steady_clock::now();
  LineReader reader(input);
  std::uint64_t lines = 0;
  {
    OutputBuffer out(output);
    std::string_view line;
    while (reader.next(line)) {
      replayer->feed(line, out.text());
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
    std::cerr << "sluice replay: cannot write " << arguments.output << '\n';
    return 1;
  }

  std::cerr << "replayed " << replayer->requests() << " requests from "
            << (arguments.input == "-" ? "stdin" : arguments.input) << " in " << elapsed << " s\n";
  if (replayer->out_of_order() > 0) {
    std::cerr << replayer->out_of_order()
              << " requests were earlier than the one before; each was decided at the latest "
                 "time seen\n";
  }
  std::cerr << '\n';
  replayer->summary().print(std::cerr);
  if (!arguments.report.empty()) {
    std::ofstream report(arguments.report);
    write_html_report(replayer->summary(), arguments.config,
                      arguments.input == "-" ? "stdin" : arguments.input, report);
    if (!report) {
      std::cerr << "sluice replay: cannot write " << arguments.report << '\n';
      return 1;
    }
    std::cerr << "\nreport: " << arguments.report << '\n';
  }
  return 0;
}

}  // namespace sluice::replay
