// Key sets fetched from a real key endpoint (tests/support/jwks_server.py): in cleartext on
// loopback, over TLS verified with the upstream CA, and every way a fetch fails, said.
#include "proxy/http/jwks_client.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <boost/json/serialize.hpp>

#include "config/load_config.hpp"
#include "tests/support/jwks_server.hpp"
#include "tests/support/minted_jwts.hpp"
#include "tests/support/temp_directory.hpp"
#include "tests/support/test_certificates.hpp"

namespace sluice::http {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

const test::MintedJwts& minted_for_fetch() {
  static const test::MintedJwts all = test::mint_jwts(1'800'000'000);
  return all;
}

/// A key set of the minted ES256 and EdDSA public keys.
std::string two_keys() {
  return R"({"keys":[)" + boost::json::serialize(minted_for_fetch().by_algorithm.at("ES256").jwk) +
         "," + boost::json::serialize(minted_for_fetch().by_algorithm.at("EdDSA").jwk) + "]}";
}

/// A configuration whose provider fetches `url`, verified with `ca` (and `server_name`).
config::ProxyConfig fetching_config(const std::string& url, const std::string& ca,
                                    const std::string& server_name = "") {
  return config::parse_config(
      "upstream: http://127.0.0.1:9000\nupstream_tls: {ca: \"" + ca + "\"" +
          (server_name.empty() ? "" : ", server_name: " + server_name) +
          "}\nauth:\n  jwt:\n    idp: {issuer: i, algorithms: [ES256, EdDSA], jwks: {url: \"" +
          url + "\"}}\nroutes: [{name: all}]\n",
      "proxy.yaml");
}

TEST(JwksClient, FetchesAKeySetInCleartextOnLoopbackAndOverVerifiedTls) {
  ASSERT_FALSE(minted_for_fetch().by_algorithm.empty()) << "the minting script ran";
  const test::TempDirectory directory("sluice-jwks");
  const test::TestCertificates certificates;
  const test::JwksServer cleartext(directory.write("plain.json", two_keys()).string());
  const test::JwksServer secured(directory.write("secured.json", two_keys()).string(),
                                 certificates.server_cert(), certificates.server_key());

  const JwksFetched plain = fetch_jwks_now(cleartext.url(), nullptr, {}, kJwksFetchTimeout);
  ASSERT_TRUE(plain.keys) << plain.error;
  EXPECT_EQ(plain.keys->keys.size(), 2U);

  const config::ProxyConfig config = fetching_config(secured.url(), certificates.ca_cert());
  const auto contexts = tls::make_contexts(config);
  ASSERT_NE(contexts->upstream, nullptr);  // a key set over https:// has the upstream context
  const JwksFetched tls = fetch_jwks_now(secured.url(), contexts->upstream.get(),
                                         config.upstream_tls, kJwksFetchTimeout);
  ASSERT_TRUE(tls.keys) << tls.error;
  EXPECT_EQ(tls.keys->keys[1].kid(), "key-eddsa");
  EXPECT_EQ(cleartext.fetches(), 1);
  EXPECT_EQ(secured.fetches(), 1);
}

TEST(JwksClient, SaysWhyAFetchFailed) {
  const test::TempDirectory directory("sluice-jwks");
  const test::TestCertificates certificates;
  const std::string file = directory.write("jwks.json", R"({"keys":[]})").string();
  const test::JwksServer cleartext(file);
  const test::JwksServer secured(file, certificates.server_cert(), certificates.server_key());
  const auto fetch = [](const std::string& url, const config::ProxyConfig* config = nullptr) {
    const auto contexts = config ? tls::make_contexts(*config) : nullptr;
    return fetch_jwks_now(url, contexts ? contexts->upstream.get() : nullptr,
                          config ? config->upstream_tls : config::UpstreamTls{}, kJwksFetchTimeout)
        .error;
  };
  EXPECT_EQ(fetch(cleartext.url()), "no key in the set verifies signatures");
  const std::string missing = "http://127.0.0.1:" + std::to_string(cleartext.port()) + "/keys";
  EXPECT_EQ(fetch(missing), "HTTP 404");
  EXPECT_THAT(fetch("http://127.0.0.1:1/jwks.json"), StartsWith("cannot connect: "));
  // The server's certificate is for localhost, signed by a CA the configuration does not trust,
  // or trusted but checked against another name.
  const config::ProxyConfig other_ca = fetching_config(secured.url(), certificates.other_ca_cert());
  EXPECT_THAT(fetch(secured.url(), &other_ca),
              HasSubstr("TLS handshake failed: certificate verify failed"));
  const config::ProxyConfig other_name =
      fetching_config(secured.url(), certificates.ca_cert(), "idp.example.test");
  EXPECT_THAT(fetch(secured.url(), &other_name),
              HasSubstr("TLS handshake failed: certificate verify failed"));
  directory.write("jwks.json", std::string(auth::kMaxJwksBytes + 10, ' '));
  EXPECT_EQ(fetch(cleartext.url()), "the key set is larger than 1 MiB");
}

TEST(JwksClient, AConfigurationWhoseKeySetCannotBeFetchedDoesNotStart) {
  const auto config = std::make_shared<const config::ProxyConfig>(
      fetching_config("http://127.0.0.1:1/jwks.json", ""));
  telemetry::Metrics metrics(1);
  try {
    live::Generation generation(config, nullptr, metrics, blocking_jwks_fetch());
    FAIL() << "built without its keys";
  } catch (const config::ConfigError& error) {
    ASSERT_EQ(error.lines().size(), 1U);
    EXPECT_THAT(error.lines()[0],
                StartsWith("proxy.yaml:5:56: auth.jwt.idp.jwks.url: http://127.0.0.1:1/jwks.json: "
                           "cannot connect: "));
  }
}

}  // namespace
}  // namespace sluice::http
