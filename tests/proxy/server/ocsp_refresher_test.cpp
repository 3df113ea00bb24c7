// OCSP stapling from the responder a listener's certificate names: a real responder (`openssl
// ocsp` behind tests/support/ocsp_responder.py, answering from the test CA's database), a real
// server, and `openssl s_client -status`, which asks for the staple and verifies it.
#include "proxy/server/ocsp_refresher.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

#include "tests/support/eventually.hpp"
#include "tests/support/ocsp_responder.hpp"
#include "tests/support/reloadable_proxy.hpp"
#include "tests/support/shell.hpp"
#include "tests/support/test_certificates.hpp"

namespace sluice::test {
namespace {

using namespace std::chrono_literals;
using ::testing::HasSubstr;

/// A config head with a TLS listener serving `chain`, and after it one that serves the same
/// certificate with `ocsp_fetch: false`.
std::string head(const TestCertificates& files, const std::string& chain) {
  const std::string files_of = "cert: " + chain + ", key: " + files.directory() + "/aia.key";
  return "listen:\n  - {address: \"127.0.0.1:0\", tls: {" + files_of +
         "}}\n  - {address: \"127.0.0.1:0\", tls: {" + files_of +
         ", ocsp_fetch: false}}\nadmin: \"127.0.0.1:0\"\nthreads: 2\nlog: {access: false}\n";
}

/// What `openssl s_client -status` shows of the listener `index`'s staple.
std::string status_of(ReloadableProxy& proxy, std::size_t index, const TestCertificates& files) {
  return output_of("timeout 5 openssl s_client -connect 127.0.0.1:" +
                   std::to_string(proxy.server().local_endpoints().at(index).port()) +
                   " -status -CAfile " + files.ca_cert() + " </dev/null 2>&1");
}

/// The status curl gets from listener `index` with `--cert-status`: it verifies the stapled
/// answer, and fails ("000") without one.
std::string curl_status(ReloadableProxy& proxy, std::size_t index, const TestCertificates& files) {
  const std::string port = std::to_string(proxy.server().local_endpoints().at(index).port());
  return output_of("curl -s -o /dev/null --max-time 5 -w '%{http_code}' --cert-status --cacert " +
                   files.ca_cert() + " --resolve localhost:" + port +
                   ":127.0.0.1 https://localhost:" + port + "/");
}

/// The `sluice_ocsp_fetches_total` series of `chain` with `result`.
std::string fetches(const std::string& chain, const std::string& result) {
  return "sluice_ocsp_fetches_total{certificate=\"" + chain + "\",result=\"" + result + "\"} ";
}

TEST(OcspRefresher, StaplesTheAnswerOfTheResponderTheCertificateNamesAndKeepsItOnReload) {
  const TestCertificates files;
  const OcspResponder responder(files.directory());
  const std::string chain = files.server_cert_naming(responder.url(), "aia");
  ReloadableProxy proxy(kForwardAll, head(files, chain));
  // The first fetch is due at once: within a tick of the start.
  ASSERT_TRUE(holds_within(10s, [&] {
    return status_of(proxy, 0, files).find("Cert Status: good") != std::string::npos;
  })) << status_of(proxy, 0, files);
  EXPECT_THAT(status_of(proxy, 0, files), HasSubstr("OCSP Response Status: successful"));
  const std::string metrics = proxy.metrics_once(fetches(chain, "ok") + "1");
  EXPECT_THAT(metrics, HasSubstr(fetches(chain, "ok") + "1\n"));
  EXPECT_THAT(metrics, HasSubstr(fetches(chain, "failed") + "0\n"));
  EXPECT_EQ(responder.requests(), 1);
  EXPECT_EQ(curl_status(proxy, 0, files), "200");
  EXPECT_THAT(status_of(proxy, 1, files), HasSubstr("OCSP response: no response sent"))
      << "the listener with ocsp_fetch: false staples nothing";
  EXPECT_EQ(curl_status(proxy, 1, files), "000");

  // A reload that keeps the certificate keeps the staple, without asking again.
  proxy.write(kForwardAll + "\nlimiters: {}");
  ASSERT_TRUE(proxy.reload().ok);
  EXPECT_THAT(status_of(proxy, 0, files), HasSubstr("Cert Status: good"));
  EXPECT_EQ(responder.requests(), 1);
}

TEST(OcspRefresher, StaplesNothingForARevokedCertificateOrAForgedAnswerAndCountsIt) {
  for (const bool revoked : {true, false}) {
    SCOPED_TRACE(revoked ? "revoked" : "forged");
    const TestCertificates files;
    const OcspResponder responder(files.directory());
    const std::string chain = files.server_cert_naming(responder.url(), "aia");
    if (revoked) {
      files.revoke(files.directory() + "/aia.pem");
    } else {
      responder.set_mode("other-ca");
    }
    ReloadableProxy proxy(kForwardAll, head(files, chain));
    const std::string failed = fetches(chain, "failed") + "1";
    EXPECT_THAT(proxy.metrics_once(failed), HasSubstr(failed + "\n"));
    EXPECT_THAT(proxy.metrics_once(failed), HasSubstr(fetches(chain, "ok") + "0\n"));
    EXPECT_EQ(responder.requests(), 1);
    EXPECT_THAT(status_of(proxy, 0, files), HasSubstr("OCSP response: no response sent"));
  }
}

}  // namespace
}  // namespace sluice::test
