#include "tests/support/ocsp_responder.hpp"

#include <fstream>
#include <stdexcept>
#include <vector>

namespace sluice::test {

OcspResponder::OcspResponder(std::string directory) : directory_(std::move(directory)) {
  const std::string script = SLUICE_SOURCE_DIR "/tests/support/ocsp_responder.py";
  process_ = std::make_unique<ChildProcess>(
      std::vector<std::string>{"/usr/bin/python3", script, directory_});
  if (process_->first_line().empty()) {
    throw std::runtime_error("OCSP responder: " + script + " did not start");
  }
  port_ = static_cast<unsigned short>(std::stoi(process_->first_line()));
}

int OcspResponder::requests() const { return lines_in(directory_ + "/responder.log"); }

void OcspResponder::set_mode(const std::string& mode) const {
  std::ofstream(directory_ + "/responder.mode") << mode << '\n';
}

}  // namespace sluice::test
