#include "proxy/tls/contexts.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdio>
#include <string>
#include <vector>

#include "config/load_config.hpp"
#include "tests/support/test_certificates.hpp"
#include "tests/support/tls_handshake.hpp"

namespace sluice::tls {
namespace {

using test::TestCertificates;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

config::ProxyConfig config_of(const std::string& yaml) {
  return config::parse_config(yaml + "\nroutes: [{name: all, respond: {status: 200}}]\n",
                              "proxy.yaml", [](std::string_view) { return std::nullopt; });
}

std::string tls_listener(const std::string& cert, const std::string& key,
                         const std::string& more = "") {
  return "listen:\n  - \"127.0.0.1:0\"\n  - {address: \"127.0.0.1:0\", tls: {cert: " + cert +
         ", key: " + key + more + "}}\n";
}

std::vector<std::string> errors_of(const config::ProxyConfig& config) {
  try {
    make_contexts(config);
  } catch (const config::ConfigError& error) {
    return error.lines();
  }
  return {};
}

TEST(Contexts, OneForEachTlsListenerNoneForCleartextOnes) {
  const TestCertificates files;
  const auto contexts =
      make_contexts(config_of(tls_listener(files.server_cert(), files.server_key())));
  ASSERT_EQ(contexts->listeners.size(), 2U);
  EXPECT_EQ(contexts->listeners[0], nullptr);
  ASSERT_NE(contexts->listeners[1], nullptr);
  EXPECT_EQ(contexts->upstream, nullptr) << "no https:// upstream";
}

TEST(Contexts, NamesTheFileAndWhyItCannotBeUsed) {
  const TestCertificates files;
  const std::string missing = files.directory() + "/missing.pem";
  EXPECT_THAT(errors_of(config_of(tls_listener(missing, files.server_key()))),
              ElementsAre("proxy.yaml:3:42: listen[1].tls.cert: cannot read " + missing +
                          ": No such file or directory"));
  EXPECT_THAT(errors_of(config_of(tls_listener(files.server_key(), files.server_key()))),
              ElementsAre(HasSubstr("listen[1].tls.cert: " + files.server_key() +
                                    " is not a PEM certificate chain")));
  EXPECT_THAT(errors_of(config_of(tls_listener(files.expired_cert(), files.expired_key()))),
              ElementsAre("proxy.yaml:3:42: listen[1].tls.cert: " + files.expired_cert() +
                          " expired on Jan  2 00:00:00 2020 GMT"));
  EXPECT_THAT(errors_of(config_of(tls_listener(files.server_cert(), files.mismatched_key()))),
              ElementsAre(::testing::EndsWith(": listen[1].tls.key: " + files.mismatched_key() +
                                              " does not match the certificate in " +
                                              files.server_cert())));
  EXPECT_THAT(errors_of(config_of(tls_listener(files.server_cert(), files.server_key(),
                                               ", client_ca: " + missing))),
              ElementsAre(HasSubstr("listen[1].tls.client_ca: cannot read " + missing)));
}

TEST(Contexts, ReportsEveryListenerAndTheUpstreamTogether) {
  const TestCertificates files;
  const std::string missing = files.directory() + "/missing.pem";
  const config::ProxyConfig config = config_of(
      "listen:\n  - {address: \"127.0.0.1:0\", tls: {cert: " + files.expired_cert() +
      ", key: " + files.expired_key() +
      "}}\n  - {address: \"127.0.0.1:1\", tls: {cert: " + missing + ", key: " + files.server_key() +
      "}}\nupstream: https://localhost:9443\n" + "upstream_tls: {ca: " + missing + "}");
  const std::vector<std::string> errors = errors_of(config);
  ASSERT_EQ(errors.size(), 3U);
  EXPECT_THAT(errors[0], HasSubstr("listen[0].tls.cert: " + files.expired_cert() + " expired"));
  EXPECT_THAT(errors[1], HasSubstr("listen[1].tls.cert: cannot read " + missing));
  EXPECT_THAT(errors[2], HasSubstr("upstream_tls.ca: cannot read " + missing));
}

/// The protocol ALPN picks on `contexts`' TLS listener for a client that offers h2 and http/1.1.
std::string alpn_choice(const Contexts& contexts, const TestCertificates& files) {
  SSL_CTX* client = SSL_CTX_new(TLS_client_method());
  SSL_CTX_load_verify_locations(client, files.ca_cert().c_str(), nullptr);
  static constexpr unsigned char kOffered[] = "\x02h2\x08http/1.1";
  SSL_CTX_set_alpn_protos(client, kOffered, sizeof kOffered - 1);
  std::string chosen;
  {
    test::TlsHandshake handshake(client, contexts.listeners[1]->native_handle());
    if (handshake.run()) {
      const unsigned char* protocol = nullptr;
      unsigned int length = 0;
      SSL_get0_alpn_selected(handshake.client(), &protocol, &length);
      chosen.assign(reinterpret_cast<const char*>(protocol), length);
    }
  }
  SSL_CTX_free(client);
  return chosen;
}

TEST(Contexts, AlpnPrefersHttp2UnlessItIsOff) {
  const TestCertificates files;
  const std::string listener = tls_listener(files.server_cert(), files.server_key(), "");
  EXPECT_EQ(alpn_choice(*make_contexts(config_of(listener)), files), "h2");
  EXPECT_EQ(alpn_choice(*make_contexts(config_of(listener + "http2: {enabled: false}\n")), files),
            "http/1.1");
}

TEST(Contexts, TheListenerServesItsCertificateWithTheMinimumVersionAndHttp11) {
  const TestCertificates files;
  const auto contexts = make_contexts(
      config_of(tls_listener(files.server_cert(), files.server_key(), ", min_version: \"1.3\"")));
  SSL_CTX* server = contexts->listeners[1]->native_handle();

  SSL_CTX* client = SSL_CTX_new(TLS_client_method());
  SSL_CTX_load_verify_locations(client, files.ca_cert().c_str(), nullptr);
  SSL_CTX_set_verify(client, SSL_VERIFY_PEER, nullptr);
  static constexpr unsigned char kOffered[] = "\x08http/1.1";
  SSL_CTX_set_alpn_protos(client, kOffered, sizeof kOffered - 1);
  {
    test::TlsHandshake handshake(client, server);
    ASSERT_TRUE(handshake.run());
    EXPECT_EQ(SSL_version(handshake.client()), TLS1_3_VERSION);
    const unsigned char* protocol = nullptr;
    unsigned int length = 0;
    SSL_get0_alpn_selected(handshake.client(), &protocol, &length);
    EXPECT_EQ(std::string(reinterpret_cast<const char*>(protocol), length), "http/1.1");
  }
  SSL_CTX_set_max_proto_version(client, TLS1_2_VERSION);
  {
    test::TlsHandshake handshake(client, server);
    EXPECT_FALSE(handshake.run()) << "min_version 1.3 refuses TLS 1.2";
  }
  SSL_CTX_free(client);
}

TEST(Contexts, RefusesTls11EvenWithMinimumVersion12) {
  const TestCertificates files;
  const auto contexts =
      make_contexts(config_of(tls_listener(files.server_cert(), files.server_key())));
  SSL_CTX* client = SSL_CTX_new(TLS_client_method());
  SSL_CTX_set_security_level(client, 0);  // lets this client offer TLS 1.1 at all
  SSL_CTX_set_min_proto_version(client, TLS1_VERSION);
  SSL_CTX_set_max_proto_version(client, TLS1_1_VERSION);
  test::TlsHandshake handshake(client, contexts->listeners[1]->native_handle());
  EXPECT_FALSE(handshake.run());
  SSL_CTX_free(client);
}

/// Whether a TLS 1.2 client offering only `ciphers` completes a handshake with `server`.
bool tls12_handshake_with(SSL_CTX* server, const char* ciphers) {
  SSL_CTX* client = SSL_CTX_new(TLS_client_method());
  SSL_CTX_set_max_proto_version(client, TLS1_2_VERSION);
  SSL_CTX_set_cipher_list(client, ciphers);
  test::TlsHandshake handshake(client, server);
  const bool done = handshake.run();
  SSL_CTX_free(client);
  return done;
}

TEST(Contexts, OffersMozillasIntermediateSuitesOnly) {
  const TestCertificates files;
  const auto contexts =
      make_contexts(config_of(tls_listener(files.server_cert(), files.server_key())));
  SSL_CTX* server = contexts->listeners[1]->native_handle();
  // The test certificates are ECDSA (P-256): the ECDSA half of the profile applies.
  EXPECT_TRUE(tls12_handshake_with(server, "ECDHE-ECDSA-AES128-GCM-SHA256"));
  EXPECT_TRUE(tls12_handshake_with(server, "ECDHE-ECDSA-AES256-GCM-SHA384"));
  EXPECT_TRUE(tls12_handshake_with(server, "ECDHE-ECDSA-CHACHA20-POLY1305"));
  // CBC suites (LUCKY13) are not offered, though OpenSSL's defaults have them.
  EXPECT_FALSE(tls12_handshake_with(server, "ECDHE-ECDSA-AES128-SHA256"));
  EXPECT_FALSE(tls12_handshake_with(server, "ECDHE-ECDSA-AES256-SHA"));
}

TEST(Contexts, TakesTheListenersOwnCiphersAndCurves) {
  const TestCertificates files;
  const auto contexts = make_contexts(config_of(tls_listener(
      files.server_cert(), files.server_key(),
      ", ciphers: \"ECDHE-ECDSA-AES128-GCM-SHA256:ECDHE-ECDSA-AES128-SHA256\", curves: X25519")));
  SSL_CTX* server = contexts->listeners[1]->native_handle();
  EXPECT_TRUE(tls12_handshake_with(server, "ECDHE-ECDSA-AES128-SHA256"));
  EXPECT_FALSE(tls12_handshake_with(server, "ECDHE-ECDSA-CHACHA20-POLY1305"));
  // A client without X25519 finds no group in common.
  SSL_CTX* client = SSL_CTX_new(TLS_client_method());
  SSL_CTX_set1_groups_list(client, "prime256v1");
  test::TlsHandshake handshake(client, server);
  EXPECT_FALSE(handshake.run());
  SSL_CTX_free(client);
}

TEST(Contexts, NamesCiphersAndCurvesOpenSslDoesNotKnow) {
  const TestCertificates files;
  EXPECT_THAT(errors_of(config_of(tls_listener(files.server_cert(), files.server_key(),
                                               ", ciphers: \"NO-SUCH-SUITE\", curves: \"P-999\""))),
              ElementsAre(HasSubstr("listen[1].tls.ciphers: \"NO-SUCH-SUITE\" names no TLS 1.2 "
                                    "cipher suite OpenSSL offers"),
                          HasSubstr("listen[1].tls.curves: \"P-999\" is not a list of groups")));
}

/// The OCSP response the listener of `contexts` staples for a client that asks for one (empty:
/// none).
std::string stapled_response(const Contexts& contexts) {
  SSL_CTX* client = SSL_CTX_new(TLS_client_method());
  std::string stapled;
  {
    test::TlsHandshake handshake(client, contexts.listeners[1]->native_handle());
    SSL_set_tlsext_status_type(handshake.client(), TLSEXT_STATUSTYPE_ocsp);
    if (handshake.run()) {
      const unsigned char* response = nullptr;
      const long length = SSL_get_tlsext_status_ocsp_resp(handshake.client(), &response);
      if (response != nullptr && length > 0) {
        stapled.assign(reinterpret_cast<const char*>(response), static_cast<std::size_t>(length));
      }
    }
  }
  SSL_CTX_free(client);
  return stapled;
}

TEST(Contexts, StaplesTheListenersOcspResponseToClientsThatAsk) {
  const TestCertificates files;
  const std::string response = files.ocsp_response(files.server_cert(), "server-ocsp");
  const std::string stapled = stapled_response(*make_contexts(
      config_of(tls_listener(files.server_cert(), files.server_key(), ", ocsp: " + response))));
  std::FILE* file = std::fopen(response.c_str(), "rb");
  std::string bytes(4096, '\0');
  bytes.resize(std::fread(bytes.data(), 1, bytes.size(), file));
  std::fclose(file);
  EXPECT_EQ(stapled, bytes);
  EXPECT_EQ(stapled_response(
                *make_contexts(config_of(tls_listener(files.server_cert(), files.server_key())))),
            "")
      << "no ocsp file, nothing stapled";
}

TEST(Contexts, NamesAnOcspFileThatDoesNotFitTheCertificate) {
  const TestCertificates files;
  const std::string response = files.ocsp_response(files.server2_cert(), "server2-ocsp");
  EXPECT_THAT(
      errors_of(
          config_of(tls_listener(files.server_cert(), files.server_key(), ", ocsp: " + response))),
      ElementsAre("proxy.yaml:3:" +
                  std::to_string(57 + files.server_cert().size() + files.server_key().size()) +
                  ": listen[1].tls.ocsp: " + response +
                  " has no answer for the listener's certificate (its serial number)"));
}

TEST(Contexts, TheUpstreamContextVerifiesAgainstTheConfiguredCa) {
  const TestCertificates files;
  const auto contexts = make_contexts(
      config_of("upstream: https://localhost:9443\nupstream_tls: {ca: " + files.ca_cert() + "}"));
  ASSERT_NE(contexts->upstream, nullptr);
  SSL_CTX* client = contexts->upstream->native_handle();
  EXPECT_EQ(SSL_CTX_get_verify_mode(client), SSL_VERIFY_PEER);

  const auto good = make_contexts(config_of(tls_listener(files.server_cert(), files.server_key())));
  test::TlsHandshake trusted(client, good->listeners[1]->native_handle());
  EXPECT_TRUE(trusted.run());

  const auto other =
      make_contexts(config_of(tls_listener(files.other_server_cert(), files.other_server_key())));
  test::TlsHandshake untrusted(client, other->listeners[1]->native_handle());
  EXPECT_FALSE(untrusted.run());
  EXPECT_EQ(SSL_get_verify_result(untrusted.client()),
            X509_V_ERR_UNABLE_TO_GET_ISSUER_CERT_LOCALLY);
}

}  // namespace
}  // namespace sluice::tls
