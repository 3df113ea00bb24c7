// A JSON-lines log (SPEC §6: {"t": ..., "ip": ..., "headers": {...}}), as anyone who can write
// the file `sluice replay` reads, through the line reader, the JSON-line parser, the replayer,
// the summary and the report (replay_fuzz.hpp).
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "tests/fuzz/replay_fuzz.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  sluice::fuzz::replay_log(std::string_view(reinterpret_cast<const char*>(data), size),
                           sluice::fuzz::InputFormat::jsonl);
  return 0;
}
