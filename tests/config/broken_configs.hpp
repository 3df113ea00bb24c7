#pragma once

#include <string>
#include <vector>

namespace sluice::test {

/// A config with problems and the exact lines `sluice check` must print for it.
struct BrokenConfig {
  const char* name;
  const char* yaml;
  std::vector<std::string> errors;
};

/// The table of broken configs: one or more for every class of error of SPEC §2.
const std::vector<BrokenConfig>& broken_configs();

}  // namespace sluice::test
