// Replays each golden case (tests/proxy/replay/golden/NAME: proxy.yaml, input.jsonl) and compares
// the output, line for line, with expected.jsonl, whose decisions were computed by hand (why.md).
#include <gtest/gtest.h>

#include <algorithm>
#include <boost/json/parse.hpp>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "config/load_config.hpp"
#include "proxy/replay/replayer.hpp"

namespace sluice::replay {
namespace {

const std::filesystem::path kGolden =
    std::filesystem::path(SLUICE_SOURCE_DIR) / "tests/proxy/replay/golden";

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    lines.push_back(line);
  }
  return lines;
}

std::string read(const std::filesystem::path& path) {
  std::ifstream in(path);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

std::vector<std::string> cases() {
  std::vector<std::string> names;
  for (const auto& entry : std::filesystem::directory_iterator(kGolden)) {
    names.push_back(entry.path().filename().string());
  }
  std::sort(names.begin(), names.end());
  return names;
}

class Golden : public ::testing::TestWithParam<std::string> {};

TEST_P(Golden, ReplaysAsComputedByHand) {
  const std::filesystem::path directory = kGolden / GetParam();
  const config::ProxyConfig config = config::load_config((directory / "proxy.yaml").string());
  Replayer replayer(config, InputFormat::jsonl);
  std::string output;
  for (const std::string& line : lines_of(read(directory / "input.jsonl"))) {
    replayer.feed(line, output);
  }
  const std::vector<std::string> expected = lines_of(read(directory / "expected.jsonl"));
  const std::vector<std::string> actual = lines_of(output);
  ASSERT_EQ(actual.size(), expected.size()) << output;
  for (std::size_t i = 0; i < expected.size(); ++i) {
    EXPECT_EQ(actual[i], expected[i]) << "line " << i + 1 << " of " << GetParam();
    boost::json::error_code error;
    boost::json::parse(actual[i], error);
    EXPECT_FALSE(error) << error.message() << " on line " << i + 1 << " of " << GetParam();
  }
}

INSTANTIATE_TEST_SUITE_P(Cases, Golden, ::testing::ValuesIn(cases()),
                         [](const auto& test_case) { return test_case.param; });

}  // namespace
}  // namespace sluice::replay
