// The request sluice makes of the OCSP responder a certificate names, checked against what
// `openssl ocsp` makes for the same certificate, and what the answers do to the staple.
#include "proxy/tls/ocsp_fetch.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <openssl/evp.h>

#include <memory>
#include <string>

#include "tests/support/shell.hpp"
#include "tests/support/test_certificates.hpp"

namespace sluice::tls {
namespace {

using test::TestCertificates;
using ::testing::HasSubstr;
using namespace std::chrono_literals;

/// A server context serving the chain in `cert` (no key: nothing here handshakes).
std::unique_ptr<SSL_CTX, decltype(&SSL_CTX_free)> serving(const std::string& cert) {
  std::unique_ptr<SSL_CTX, decltype(&SSL_CTX_free)> context(SSL_CTX_new(TLS_server_method()),
                                                            &SSL_CTX_free);
  EXPECT_EQ(SSL_CTX_use_certificate_chain_file(context.get(), cert.c_str()), 1) << cert;
  return context;
}

constexpr const char* kResponder = "http://127.0.0.1:9";

/// A certificate that names kResponder (aia.pem), served with its chain, and its fetch.
class OcspFetching : public ::testing::Test {
 protected:
  void SetUp() override {
    fetch = OcspFetch::for_context(context.get(), chain, why);
    ASSERT_NE(fetch, nullptr) << why;
  }

  const TestCertificates files;
  const std::string chain = files.server_cert_naming(kResponder, "aia");
  const std::string leaf = files.directory() + "/aia.pem";
  std::unique_ptr<SSL_CTX, decltype(&SSL_CTX_free)> context = serving(chain);
  std::string why;
  std::shared_ptr<OcspFetch> fetch;
};

TEST_F(OcspFetching, AsksTheResponderTheCertificateNamesWithTheRequestOpensslMakes) {
  EXPECT_EQ(fetch->name(), chain);
  EXPECT_EQ(fetch->responder(), kResponder);
  // RFC 5019: one SHA-1 certificate ID, no nonce, in base64 with + / = URL-encoded.
  test::output_of("cd " + files.directory() +
                  " && openssl ocsp -issuer ca.pem -cert aia.pem -no_nonce -reqout expected.req");
  const std::string expected = TestCertificates::bytes(files.directory() + "/expected.req");
  ASSERT_FALSE(expected.empty());
  std::string base64(4 * ((expected.size() + 2) / 3), '\0');
  EVP_EncodeBlock(reinterpret_cast<unsigned char*>(base64.data()),
                  reinterpret_cast<const unsigned char*>(expected.data()),
                  static_cast<int>(expected.size()));
  std::string encoded;
  for (const char c : base64) {
    encoded += c == '+' ? "%2B" : c == '/' ? "%2F" : c == '=' ? "%3D" : std::string(1, c);
  }
  EXPECT_EQ(fetch->url(), std::string(kResponder) + "/" + encoded);
  EXPECT_EQ(fetch->slot()->load(), nullptr) << "nothing to staple before the first answer";

  // Another context for the same certificate (a reload) shares the fetch, staple and schedule.
  auto reloaded = serving(chain);
  EXPECT_EQ(OcspFetch::for_context(reloaded.get(), chain, why), fetch);
  const std::string rotated = files.server_cert_naming(kResponder, "aia2");
  auto other = serving(rotated);
  const std::shared_ptr<OcspFetch> next = OcspFetch::for_context(other.get(), rotated, why);
  ASSERT_NE(next, nullptr);
  EXPECT_NE(next, fetch);
  EXPECT_NE(next->url(), fetch->url());
}

TEST(OcspFetch, NoneWithoutAResponderAndNoneWithoutTheIssuerInTheChain) {
  const TestCertificates files;
  std::string why = "not cleared";
  auto plain = serving(files.server_cert());
  EXPECT_EQ(OcspFetch::for_context(plain.get(), files.server_cert(), why), nullptr);
  EXPECT_EQ(why, "") << "a certificate that names no responder has nothing to staple";

  files.server_cert_naming(kResponder, "aia");
  const std::string leaf_only = files.directory() + "/aia.pem";
  auto alone = serving(leaf_only);
  EXPECT_EQ(OcspFetch::for_context(alone.get(), leaf_only, why), nullptr);
  EXPECT_EQ(why, leaf_only +
                     " names an OCSP responder (http://127.0.0.1:9) but not its issuer's "
                     "certificate after it: the request names the issuer and its answer "
                     "is verified against it");
}

TEST_F(OcspFetching, AGoodAnswerIsStapledARevokedOneEmptiesTheSlotOthersKeepIt) {
  const OcspStaple::Checked good =
      fetch->take(TestCertificates::bytes(files.ocsp_response(leaf, "good")));
  ASSERT_NE(good.staple, nullptr) << good.why;
  EXPECT_EQ(fetch->slot()->load(), good.staple);

  const OcspStaple::Checked garbage = fetch->take("not an OCSP response");
  EXPECT_THAT(garbage.why, HasSubstr(std::string(kResponder) + " is not a DER OCSP response"));
  EXPECT_EQ(fetch->slot()->load(), good.staple) << "a bad answer keeps the good one";
  const OcspStaple::Checked forged =
      fetch->take(TestCertificates::bytes(files.ocsp_response(leaf, "forged", false, "other-ca")));
  EXPECT_EQ(forged.staple, nullptr);
  EXPECT_EQ(fetch->slot()->load(), good.staple);

  const OcspStaple::Checked revoked =
      fetch->take(TestCertificates::bytes(files.ocsp_response(leaf, "revoked", true)));
  EXPECT_TRUE(revoked.revoked);
  EXPECT_EQ(fetch->slot()->load(), nullptr) << "a revoked certificate is vouched for no longer";
}

TEST(OcspFetch, AsksAgainHalfwayToNextUpdateWithinAMinuteAndAnHour) {
  const std::time_t now = 1'800'000'000;
  const auto after = [now](std::time_t next_update) {
    const OcspStaple staple({}, next_update);
    return OcspFetch::refresh_after(&staple, now);
  };
  EXPECT_EQ(OcspFetch::refresh_after(nullptr, now), 300s) << "a failure: five minutes";
  EXPECT_EQ(after(0), 3600s) << "no nextUpdate";
  EXPECT_EQ(after(now + 7 * 24 * 3600), 3600s);
  EXPECT_EQ(after(now + 7200), 3600s);
  EXPECT_EQ(after(now + 1000), 500s);
  EXPECT_EQ(after(now + 100), 60s);
  EXPECT_EQ(after(now - 100), 60s) << "already stale: soon, not in a busy loop";
}

}  // namespace
}  // namespace sluice::tls
