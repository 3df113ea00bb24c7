#include "tests/support/https_upstream.hpp"

#include <stdexcept>
#include <vector>

namespace sluice::test {

HttpsUpstream::HttpsUpstream(const std::string& cert, const std::string& key,
                             const std::string& client_ca) {
  const std::string script = SLUICE_SOURCE_DIR "/tests/support/https_upstream.py";
  std::vector<std::string> arguments = {"/usr/bin/python3", script, cert, key};
  if (!client_ca.empty()) {
    arguments.push_back(client_ca);
  }
  process_ = std::make_unique<ChildProcess>(std::move(arguments));
  if (process_->first_line().empty()) {
    throw std::runtime_error("https upstream: " + script + " did not start");
  }
  port_ = static_cast<unsigned short>(std::stoi(process_->first_line()));
}

}  // namespace sluice::test
