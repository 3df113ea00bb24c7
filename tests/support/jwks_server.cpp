#include "tests/support/jwks_server.hpp"

#include <stdexcept>
#include <vector>

namespace sluice::test {

JwksServer::JwksServer(std::string file, const std::string& cert, const std::string& key)
    : file_(std::move(file)), tls_(!cert.empty()) {
  const std::string script = SLUICE_SOURCE_DIR "/tests/support/jwks_server.py";
  std::vector<std::string> arguments = {"/usr/bin/python3", script, file_};
  if (tls_) {
    arguments.push_back(cert);
    arguments.push_back(key);
  }
  process_ = std::make_unique<ChildProcess>(std::move(arguments));
  if (process_->first_line().empty()) {
    throw std::runtime_error("jwks server: " + script + " did not start");
  }
  port_ = static_cast<unsigned short>(std::stoi(process_->first_line()));
}

std::string JwksServer::url() const {
  return (tls_ ? "https://localhost:" : "http://127.0.0.1:") + std::to_string(port_) + "/jwks.json";
}

int JwksServer::fetches() const { return lines_in(file_ + ".fetches"); }

}  // namespace sluice::test
