#pragma once

#include <memory>
#include <string>

#include "tests/support/child_process.hpp"

namespace sluice::test {

/// The test CA's OCSP responder (tests/support/ocsp_responder.py: `openssl ocsp` behind Python's
/// http.server) on 127.0.0.1, started for a test and stopped with it. It answers from the CA's
/// database in `directory` (a TestCertificates directory), so TestCertificates::revoke shows.
class OcspResponder {
 public:
  explicit OcspResponder(std::string directory);

  /// "http://127.0.0.1:PORT": what a certificate's Authority Information Access names.
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }
  /// How many requests it has had.
  int requests() const;
  /// From the next request on: "" (answer), "503", "garbage" or "other-ca" (see the script).
  void set_mode(const std::string& mode) const;

 private:
  std::string directory_;
  std::unique_ptr<ChildProcess> process_;
  unsigned short port_ = 0;
};

}  // namespace sluice::test
