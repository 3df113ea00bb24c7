#include "proxy/tls/peer.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "tests/support/test_certificates.hpp"
#include "tests/support/tls_handshake.hpp"

namespace sluice::tls {
namespace {

using test::TestCertificates;

SSL_CTX* server_asking_for_clients(const TestCertificates& files, const std::string& cert,
                                   const std::string& key) {
  SSL_CTX* context = SSL_CTX_new(TLS_server_method());
  SSL_CTX_use_certificate_chain_file(context, cert.c_str());
  SSL_CTX_use_PrivateKey_file(context, key.c_str(), SSL_FILETYPE_PEM);
  SSL_CTX_load_verify_locations(context, files.ca_cert().c_str(), nullptr);
  SSL_CTX_set_verify(context, SSL_VERIFY_PEER, nullptr);
  return context;
}

SSL_CTX* client_with(const TestCertificates& files, int i) {
  SSL_CTX* context = SSL_CTX_new(TLS_client_method());
  SSL_CTX_use_certificate_chain_file(context, files.client_cert(i).c_str());
  SSL_CTX_use_PrivateKey_file(context, files.client_key(i).c_str(), SSL_FILETYPE_PEM);
  SSL_CTX_load_verify_locations(context, files.ca_cert().c_str(), nullptr);
  SSL_CTX_set_verify(context, SSL_VERIFY_PEER, nullptr);
  return context;
}

TEST(ClientCertificate, ReadsTheSubjectTheFirstNameAndTheFingerprintAsOpensslPrintsThem) {
  const TestCertificates files;
  SSL_CTX* server = server_asking_for_clients(files, files.server_cert(), files.server_key());
  for (int i : {0, 1}) {
    SSL_CTX* client = client_with(files, i);
    test::TlsHandshake handshake(client, server);
    ASSERT_TRUE(handshake.run());
    const auto certificate = client_certificate(handshake.server());
    ASSERT_TRUE(certificate.has_value());
    EXPECT_EQ(certificate->subject, TestCertificates::subject(files.client_cert(i)));
    EXPECT_EQ(certificate->subject, "CN=client-" + std::to_string(i) + ",O=sluice-test");
    // Client 1 also has a URI name, after its DNS name: the first one counts.
    EXPECT_EQ(certificate->san, "client-" + std::to_string(i) + ".test");
    EXPECT_EQ(certificate->fingerprint, TestCertificates::fingerprint(files.client_cert(i)));
    SSL_CTX_free(client);
  }
  SSL_CTX_free(server);
}

TEST(ClientCertificate, NoneWithoutOne) {
  const TestCertificates files;
  SSL_CTX* server = server_asking_for_clients(files, files.server_cert(), files.server_key());
  SSL_CTX* client = SSL_CTX_new(TLS_client_method());
  test::TlsHandshake handshake(client, server);
  ASSERT_TRUE(handshake.run());
  EXPECT_FALSE(client_certificate(handshake.server()).has_value());
  SSL_CTX_free(client);
  SSL_CTX_free(server);
}

TEST(ExpectServer, AcceptsItsNameOrAddressAndSaysWhyItRefusesAnother) {
  const TestCertificates files;
  SSL_CTX* client = SSL_CTX_new(TLS_client_method());
  SSL_CTX_load_verify_locations(client, files.ca_cert().c_str(), nullptr);
  SSL_CTX_set_verify(client, SSL_VERIFY_PEER, nullptr);
  SSL_CTX* server = SSL_CTX_new(TLS_server_method());
  SSL_CTX_use_certificate_chain_file(server, files.server_cert().c_str());
  SSL_CTX_use_PrivateKey_file(server, files.server_key().c_str(), SSL_FILETYPE_PEM);
  for (const char* name : {"localhost", "127.0.0.1"}) {
    test::TlsHandshake handshake(client, server);
    expect_server(handshake.client(), name);
    EXPECT_TRUE(handshake.run()) << name;
  }
  for (const char* name : {"api.example.test", "127.0.0.2"}) {
    test::TlsHandshake handshake(client, server);
    expect_server(handshake.client(), name);
    EXPECT_FALSE(handshake.run()) << name;
    EXPECT_THAT(handshake_failure(handshake.client(), {}),
                ::testing::StartsWith("certificate verify failed: "))
        << name;
  }
  test::TlsHandshake named(client, server);
  expect_server(named.client(), "localhost");
  named.run();
  EXPECT_STREQ(SSL_get_servername(named.server(), TLSEXT_NAMETYPE_host_name), "localhost")
      << "SNI for a name";
  SSL_CTX_free(client);
  SSL_CTX_free(server);
}

}  // namespace
}  // namespace sluice::tls
