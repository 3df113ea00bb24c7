#include "proxy/tls/ocsp_staple.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <openssl/pem.h>

#include <cstdio>
#include <ctime>
#include <memory>
#include <string>

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

}  // namespace
}  // namespace sluice::tls
