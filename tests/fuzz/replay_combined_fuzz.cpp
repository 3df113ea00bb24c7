// An nginx / Apache combined access log, whose lines carry what clients sent (the request line,
// the referer, the user agent), through the line reader, the combined-log parser, the replayer,
// the summary and the report (replay_fuzz.hpp).
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "tests/fuzz/replay_fuzz.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  sluice::fuzz::replay_log(std::string_view(reinterpret_cast<const char*>(data), size),
                           sluice::fuzz::InputFormat::combined);
  return 0;
}
