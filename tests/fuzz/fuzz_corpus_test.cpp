// Every seed and regression input of the fuzz targets (tests/fuzz/corpus/TARGET and
// tests/fuzz/regressions/TARGET) through its target's entry function, compiled with the ordinary
// toolchain, without libFuzzer: what the fuzzer once found stays fixed in the ordinary suite,
// and the asan build checks the inputs again under the sanitizers. A target's checks abort on a
// failure, which fails its test. Each target's LLVMFuzzerTestOneInput is compiled here under
// the name sluice_fuzz_TARGET (tests/CMakeLists.txt), so that all of them fit in one binary.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <set>
#include <string>
#include <vector>

extern "C" int sluice_fuzz_config(const std::uint8_t* data, std::size_t size);
extern "C" int sluice_fuzz_pipeline(const std::uint8_t* data, std::size_t size);
extern "C" int sluice_fuzz_http(const std::uint8_t* data, std::size_t size);
extern "C" int sluice_fuzz_http2(const std::uint8_t* data, std::size_t size);
extern "C" int sluice_fuzz_jwt(const std::uint8_t* data, std::size_t size);
extern "C" int sluice_fuzz_replay_jsonl(const std::uint8_t* data, std::size_t size);
extern "C" int sluice_fuzz_replay_combined(const std::uint8_t* data, std::size_t size);
extern "C" int sluice_fuzz_resp(const std::uint8_t* data, std::size_t size);
extern "C" int sluice_fuzz_usage(const std::uint8_t* data, std::size_t size);
extern "C" int sluice_fuzz_rls(const std::uint8_t* data, std::size_t size);

namespace {

namespace fs = std::filesystem;

struct Target {
  const char* name;
  int (*entry)(const std::uint8_t* data, std::size_t size);
};

constexpr Target kTargets[] = {{"config", sluice_fuzz_config},
                               {"pipeline", sluice_fuzz_pipeline},
                               {"http", sluice_fuzz_http},
                               {"http2", sluice_fuzz_http2},
                               {"jwt", sluice_fuzz_jwt},
                               {"replay_jsonl", sluice_fuzz_replay_jsonl},
                               {"replay_combined", sluice_fuzz_replay_combined},
                               {"resp", sluice_fuzz_resp},
                               {"usage", sluice_fuzz_usage},
                               {"rls", sluice_fuzz_rls}};

const fs::path kFuzzDirectory = fs::path(SLUICE_SOURCE_DIR) / "tests" / "fuzz";

/// The files of a folder, sorted; none when it does not exist.
std::vector<fs::path> files_in(const fs::path& folder) {
  std::vector<fs::path> files;
  if (fs::is_directory(folder)) {
    for (const fs::directory_entry& entry : fs::directory_iterator(folder)) {
      if (entry.is_regular_file()) {
        files.push_back(entry.path());
      }
    }
  }
  std::sort(files.begin(), files.end());
  return files;
}

class FuzzCorpus : public ::testing::TestWithParam<Target> {};

TEST_P(FuzzCorpus, ReplaysEverySeedAndRegression) {
  const Target& target = GetParam();
  std::size_t seeds = 0;
  for (const char* folder : {"corpus", "regressions"}) {
    for (const fs::path& file : files_in(kFuzzDirectory / folder / target.name)) {
      SCOPED_TRACE(file.string());
      std::ifstream in(file, std::ios::binary);
      ASSERT_TRUE(in) << "cannot read it";
      const std::string bytes((std::istreambuf_iterator<char>(in)),
                              std::istreambuf_iterator<char>());
      EXPECT_EQ(target.entry(reinterpret_cast<const std::uint8_t*>(bytes.data()), bytes.size()), 0);
      if (folder == std::string("corpus")) {
        ++seeds;
      }
    }
  }
  EXPECT_GT(seeds, 0U) << "no seed in tests/fuzz/corpus/" << target.name;
}

INSTANTIATE_TEST_SUITE_P(Targets, FuzzCorpus, ::testing::ValuesIn(kTargets),
                         [](const ::testing::TestParamInfo<Target>& target) {
                           return std::string(target.param.name);
                         });

TEST(FuzzCorpus, EveryFolderBelongsToATarget) {
  // A new target's inputs are replayed only once it is listed above.
  std::set<std::string> names;
  for (const Target& target : kTargets) {
    names.insert(target.name);
  }
  for (const char* folder : {"corpus", "regressions"}) {
    if (!fs::is_directory(kFuzzDirectory / folder)) {
      continue;
    }
    for (const fs::directory_entry& entry : fs::directory_iterator(kFuzzDirectory / folder)) {
      EXPECT_TRUE(names.contains(entry.path().filename().string()))
          << entry.path() << ": no target of that name in kTargets";
    }
  }
  for (const Target& target : kTargets) {
    EXPECT_TRUE(fs::exists(kFuzzDirectory / (std::string(target.name) + "_fuzz.cpp")))
        << target.name;
  }
}

}  // namespace
