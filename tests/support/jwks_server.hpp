#pragma once

#include <memory>
#include <string>

#include "tests/support/child_process.hpp"

namespace sluice::test {

/// An identity provider's key endpoint (tests/support/jwks_server.py) on 127.0.0.1, started for
/// a test and stopped with it: GET /jwks.json answers with the file's text as it is at that
/// moment, so a test rotates keys by writing the file. In cleartext, or TLS with `cert`/`key`.
class JwksServer {
 public:
  explicit JwksServer(std::string file, const std::string& cert = "", const std::string& key = "");

  unsigned short port() const noexcept { return port_; }
  /// "http://127.0.0.1:PORT/jwks.json", or https://localhost:PORT/jwks.json with TLS.
  std::string url() const;
  /// How many times the key set was fetched.
  int fetches() const;

 private:
  std::string file_;
  bool tls_;
  std::unique_ptr<ChildProcess> process_;
  unsigned short port_ = 0;
};

}  // namespace sluice::test
