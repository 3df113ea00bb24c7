#pragma once

#include <memory>
#include <string>

#include "tests/support/child_process.hpp"

namespace sluice::test {

/// A real HTTPS upstream (tests/support/https_upstream.py: Python's http.server and ssl) on
/// 127.0.0.1, started for a test and stopped with it. It answers 200 with the request's line and
/// headers, the connection's number and the client certificate's subject.
class HttpsUpstream {
 public:
  /// With `client_ca`, it requires client certificates signed by it.
  HttpsUpstream(const std::string& cert, const std::string& key, const std::string& client_ca = "");
  HttpsUpstream(const HttpsUpstream&) = delete;
  HttpsUpstream& operator=(const HttpsUpstream&) = delete;
  HttpsUpstream(HttpsUpstream&&) = delete;
  HttpsUpstream& operator=(HttpsUpstream&&) = delete;
  ~HttpsUpstream() = default;

  unsigned short port() const noexcept { return port_; }

 private:
  std::unique_ptr<ChildProcess> process_;
  unsigned short port_ = 0;
};

}  // namespace sluice::test
