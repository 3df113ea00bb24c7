#include "tests/support/grpc_upstream.hpp"

#include <stdexcept>
#include <vector>

#include "tests/support/shell.hpp"

namespace sluice::test {
namespace {

const std::string kScript = SLUICE_SOURCE_DIR "/tests/support/grpc_peer.py";

}  // namespace

GrpcUpstream::GrpcUpstream(const std::string& events) {
  std::vector<std::string> arguments = {"/usr/bin/python3", kScript, "server", "--port", "0"};
  if (!events.empty()) {
    arguments.insert(arguments.end(), {"--events", events});
  }
  process_ = std::make_unique<ChildProcess>(std::move(arguments));
  const std::string& line = process_->first_line();  // {"port": N}
  const std::size_t colon = line.find(':');
  if (line.find("\"port\"") == std::string::npos || colon == std::string::npos) {
    throw std::runtime_error("grpc upstream: " + kScript + " did not start: " + line);
  }
  port_ = static_cast<unsigned short>(std::stoi(line.substr(colon + 1)));
}

std::string grpc_call(unsigned short port, const std::string& arguments) {
  return output_of("timeout 20 /usr/bin/python3 " + kScript + " client --target 127.0.0.1:" +
                   std::to_string(port) + " " + arguments + " 2>/dev/null");
}

}  // namespace sluice::test
