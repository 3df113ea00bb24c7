#include "proxy/tls/ocsp_staple.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <openssl/ocsp.h>
#include <openssl/pem.h>

#include <cstdio>
#include <ctime>
#include <memory>
#include <string>
#include <vector>

#include "tests/support/test_certificates.hpp"

namespace sluice::tls {
namespace {

using test::TestCertificates;
using ::testing::HasSubstr;

/// The certificate in a PEM file; freed with the pointer.
std::unique_ptr<X509, decltype(&X509_free)> certificate_in(const std::string& path) {
  std::FILE* file = std::fopen(path.c_str(), "r");
  X509* certificate = file != nullptr ? PEM_read_X509(file, nullptr, nullptr, nullptr) : nullptr;
  if (file != nullptr) {
    std::fclose(file);
  }
  return {certificate, &X509_free};
}

TEST(OcspStaple, ReadsAGoodAnswerForTheCertificateAndKeepsItsBytes) {
  const TestCertificates files;
  const std::string response = files.ocsp_response(files.server_cert(), "server-ocsp");
  const auto certificate = certificate_in(files.server_cert());
  std::string why;
  const auto staple = OcspStaple::read(response, certificate.get(), why);
  ASSERT_NE(staple, nullptr) << why;
  EXPECT_EQ(why, "");
  std::FILE* file = std::fopen(response.c_str(), "rb");
  std::fseek(file, 0, SEEK_END);
  EXPECT_EQ(staple->der().size(), static_cast<std::size_t>(std::ftell(file)));
  std::fclose(file);
  // `openssl ocsp -ndays 1`: current now, stale after its nextUpdate a day from now.
  const std::time_t now = std::time(nullptr);
  EXPECT_TRUE(staple->current(now));
  EXPECT_TRUE(staple->current(now + 23 * 3600));
  EXPECT_FALSE(staple->current(now + 25 * 3600));
}

/// Why a response from ca about `answered` (revoked first, with `revoked`) does not do for the
/// server certificate, or "" if it does.
std::string refusal(const TestCertificates& files, const std::string& answered, bool revoked) {
  const std::string response = files.ocsp_response(answered, "response", revoked);
  const auto certificate = certificate_in(files.server_cert());
  std::string why;
  const bool refused = OcspStaple::read(response, certificate.get(), why) == nullptr;
  EXPECT_EQ(refused, !why.empty());
  return why;
}

TEST(OcspStaple, RefusesAnAnswerForAnotherCertificateOrARevokedOne) {
  const TestCertificates files;
  const std::string response = files.directory() + "/response.der";
  EXPECT_EQ(refusal(files, files.server2_cert(), false),
            response + " has no answer for the listener's certificate (its serial number)");
  EXPECT_EQ(refusal(files, files.server_cert(), true),
            response + " says the certificate is revoked");
}

TEST(OcspStaple, NamesAFileThatIsMissingOrNotAnOcspResponse) {
  const TestCertificates files;
  const auto certificate = certificate_in(files.server_cert());
  std::string why;
  const std::string missing = files.directory() + "/missing.der";
  EXPECT_EQ(OcspStaple::read(missing, certificate.get(), why), nullptr);
  EXPECT_EQ(why, "cannot read " + missing + ": No such file or directory");
  EXPECT_EQ(OcspStaple::read(files.server_cert(), certificate.get(), why), nullptr);
  EXPECT_THAT(why, HasSubstr(" is not a DER OCSP response"));
}

/// What OcspStaple::check says of the response in `response` for the server certificate.
OcspStaple::Checked checked_for_server(const TestCertificates& files, const std::string& response,
                                       const std::string& source) {
  const auto certificate = certificate_in(files.server_cert());
  const auto issuer = certificate_in(files.ca_cert());
  OCSP_CERTID* id = OCSP_cert_to_id(EVP_sha1(), certificate.get(), issuer.get());
  OcspStaple::Checked checked =
      OcspStaple::check(TestCertificates::bytes(response), source, id, issuer.get());
  OCSP_CERTID_free(id);
  return checked;
}

TEST(OcspStaple, TakesAResponderAnswerTheIssuerSignedForTheCertificate) {
  const TestCertificates files;
  const std::string response = files.ocsp_response(files.server_cert(), "good");
  const OcspStaple::Checked checked = checked_for_server(files, response, "http://ocsp.test");
  ASSERT_NE(checked.staple, nullptr) << checked.why;
  EXPECT_EQ(checked.why, "");
  EXPECT_FALSE(checked.revoked);
  const std::string der = TestCertificates::bytes(response);
  EXPECT_EQ(checked.staple->der(), std::vector<unsigned char>(der.begin(), der.end()));
  const std::time_t now = std::time(nullptr);
  EXPECT_GT(checked.staple->next_update(), now + 23 * 3600);
  EXPECT_LT(checked.staple->next_update(), now + 25 * 3600);
}

TEST(OcspStaple, RefusesAResponderAnswerSignedByAnotherCaForAnotherCertificateOrRevoked) {
  const TestCertificates files;
  const std::string source = "http://ocsp.test";
  const OcspStaple::Checked forged = checked_for_server(
      files, files.ocsp_response(files.server_cert(), "forged", false, "other-ca"), source);
  EXPECT_EQ(forged.staple, nullptr);
  EXPECT_EQ(forged.why, source +
                            " is not signed by the certificate's issuer (nor by a responder it "
                            "delegated to)");
  const OcspStaple::Checked other =
      checked_for_server(files, files.ocsp_response(files.server2_cert(), "other"), source);
  EXPECT_EQ(other.why,
            source + " has no answer for the listener's certificate (its serial number)");
  EXPECT_FALSE(other.revoked);
  const OcspStaple::Checked revoked =
      checked_for_server(files, files.ocsp_response(files.server_cert(), "revoked", true), source);
  EXPECT_EQ(revoked.staple, nullptr);
  EXPECT_EQ(revoked.why, source + " says the certificate is revoked");
  EXPECT_TRUE(revoked.revoked);
  const OcspStaple::Checked garbage = checked_for_server(files, files.server_cert(), source);
  EXPECT_THAT(garbage.why, HasSubstr(" is not a DER OCSP response"));
}

}  // namespace
}  // namespace sluice::tls
