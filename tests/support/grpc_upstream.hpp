#pragma once

#include <memory>
#include <string>

#include "tests/support/child_process.hpp"

namespace sluice::test {

/// A real gRPC server (tests/support/grpc_peer.py: grpcio with generic handlers, service
/// test.Echo: Unary, ServerStream, ClientStream, Bidi, Slow) on 127.0.0.1, cleartext HTTP/2,
/// started for a test and stopped with it. With `events`, Slow writes "cancelled" there when a
/// call ends early.
class GrpcUpstream {
 public:
  explicit GrpcUpstream(const std::string& events = "");

  unsigned short port() const noexcept { return port_; }

 private:
  std::unique_ptr<ChildProcess> process_;
  unsigned short port_ = 0;
};

/// What `grpc_peer.py client ARGUMENTS` prints: one JSON line with each call's code, details,
/// responses and metadata.
std::string grpc_call(unsigned short port, const std::string& arguments);

}  // namespace sluice::test
