// TLS listeners and https:// upstreams over real sockets, with real clients (curl, openssl
// s_client, Python's ssl, Beast over Asio's ssl stream), certificates made by the openssl CLI
// (TestCertificates), and a real HTTPS upstream (Python's http.server).
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <spdlog/sinks/ringbuffer_sink.h>
#include <spdlog/spdlog.h>

#include <boost/asio/ssl.hpp>
#include <boost/beast/ssl.hpp>
#include <boost/json.hpp>
#include <chrono>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <thread>

#include "config/load_config.hpp"
#include "proxy/http/http1_connection.hpp"
#include "proxy/live/reloader.hpp"
#include "proxy/server/server.hpp"
#include "proxy/tls/peer.hpp"
#include "tests/support/eventually.hpp"
#include "tests/support/https_upstream.hpp"
#include "tests/support/proxy_fixture.hpp"
#include "tests/support/reloadable_proxy.hpp"
#include "tests/support/shell.hpp"
#include "tests/support/test_certificates.hpp"
#include "tests/support/test_upstream.hpp"

namespace sluice::test {
namespace {

using namespace std::chrono_literals;
using ::testing::HasSubstr;
using ::testing::Not;
namespace ssl = net::ssl;

/// The head of a config with a cleartext and a TLS listener; `tls`: what goes inside `tls: {...}`.
std::string tls_head(const std::string& tls) {
  return "listen:\n  - \"127.0.0.1:0\"\n  - {address: \"127.0.0.1:0\", tls: {" + tls +
         "}}\nadmin: \"127.0.0.1:0\"\nthreads: 2\nlog: {access: false}\n";
}

/// A reloadable Server with a cleartext and a TLS listener, and what the tests ask of it.
class TlsProxy {
 public:
  /// `tls`: what goes inside the listener's `tls: {...}`; `body`: the rest of the config.
  TlsProxy(const std::string& tls, const std::string& body) : proxy_(body, tls_head(tls)) {}

  unsigned short plain_port() { return proxy_.server().local_endpoints().at(0).port(); }
  unsigned short tls_port() { return proxy_.server().local_endpoints().at(1).port(); }
  std::size_t parked_connections() { return proxy_.server().parked_connections(); }

  /// Rewrites the config file and reloads it.
  live::ReloadReport reload(const std::string& tls, const std::string& body) {
    proxy_.write(body, tls_head(tls));
    return proxy_.reload();
  }

  /// The metric line that starts with `series`.
  std::string metric(const std::string& series) {
    const std::string text = proxy_.send(get("/metrics"), true).body();
    const std::size_t at = text.find("\n" + series + " ");
    return at == std::string::npos ? "" : text.substr(at + 1, text.find('\n', at + 1) - at - 1);
  }

  /// `curl ARGUMENTS https://localhost:PORT/PATH`, localhost pinned to 127.0.0.1; prints the
  /// body then the status code.
  std::string curl(const std::string& arguments, const std::string& path = "/") {
    const std::string port = std::to_string(tls_port());
    return output_of("curl -s --max-time 5 --resolve localhost:" + port + ":127.0.0.1 " +
                     arguments + " -w '%{http_code}' https://localhost:" + port + path + " 2>&1");
  }

 private:
  ReloadableProxy proxy_;
};

std::string server_files(const TestCertificates& files) {
  return "cert: " + files.server_cert() + ", key: " + files.server_key();
}

/// A Beast client over Asio's TLS stream, for what needs one connection kept across steps.
class TlsClient {
 public:
  TlsClient(unsigned short port, const std::string& ca) : context_(ssl::context::tls_client) {
    context_.load_verify_file(ca);
    context_.set_verify_mode(ssl::verify_peer);
    stream_ = std::make_unique<beast::ssl_stream<beast::tcp_stream>>(io_, context_);
    tls::expect_server(stream_->native_handle(), "localhost");
    beast::get_lowest_layer(*stream_).connect(
        tcp::endpoint(net::ip::make_address("127.0.0.1"), port));
    stream_->handshake(ssl::stream_base::client);
  }

  http::response<http::string_body> send(http::request<http::string_body> request) {
    request.set(http::field::host, "localhost");
    request.prepare_payload();
    http::write(*stream_, request);
    http::response<http::string_body> response;
    http::read(*stream_, buffer_, response);
    return response;
  }

  void write(std::string_view bytes) { net::write(*stream_, net::buffer(bytes)); }
  /// Reads until `text` has arrived; all that arrived.
  std::string read_until(std::string_view text) {
    std::string got;
    while (got.find(text) == std::string::npos) {
      std::array<char, 4096> chunk;
      beast::error_code ec;
      const std::size_t n = stream_->read_some(net::buffer(chunk), ec);
      if (ec) {
        break;
      }
      got.append(chunk.data(), n);
    }
    return got;
  }

  /// The SHA-256 fingerprint of the certificate the server showed, as TestCertificates says it.
  std::string server_fingerprint() {
    X509* certificate = SSL_get0_peer_certificate(stream_->native_handle());
    std::array<unsigned char, EVP_MAX_MD_SIZE> digest{};
    unsigned int length = 0;
    X509_digest(certificate, EVP_sha256(), digest.data(), &length);
    std::string hex;
    for (unsigned int i = 0; i < length; ++i) {
      hex += "0123456789abcdef"[digest[i] >> 4];
      hex += "0123456789abcdef"[digest[i] & 0xf];
    }
    return hex;
  }

 private:
  net::io_context io_;
  ssl::context context_;
  std::unique_ptr<beast::ssl_stream<beast::tcp_stream>> stream_;
  beast::flat_buffer buffer_;
};

TEST(TlsListener, ForwardsHttpsWithItsHeadersAndLimitsIt) {
  const TestCertificates files;
  TlsProxy proxy(server_files(files),
                 "limiters: {per-ip: {algorithm: fixed_window, limit: 2, window: 1h}}\n"
                 "routes: [{name: all, limiters: [per-ip]}]");
  const std::string first = proxy.curl("--cacert " + files.ca_cert(), "/api/x?page=2");
  EXPECT_THAT(first, HasSubstr("GET /api/x?page=2\n"));
  EXPECT_THAT(first, HasSubstr("X-Forwarded-Proto: https\n"));
  EXPECT_THAT(first, HasSubstr("X-Forwarded-For: 127.0.0.1\n"));
  EXPECT_THAT(first, HasSubstr("X-Forwarded-Host: localhost:"));
  EXPECT_THAT(first, ::testing::EndsWith("200"));
  // Two more on one kept-alive connection: the second is over the limit.
  const std::string port = std::to_string(proxy.tls_port());
  const std::string both = proxy.curl("--cacert " + files.ca_cert() + " -o /dev/null -o /dev/null",
                                      "/a https://localhost:" + port + "/b");
  EXPECT_EQ(both, "200429");
}

TEST(TlsListener, StreamsLargeBodiesBothWays) {
  const TestCertificates files;
  TlsProxy proxy(server_files(files), std::string(kForwardAll));
  std::string upload(8'000'000, '\0');
  for (std::size_t i = 0; i < upload.size(); ++i) {
    upload[i] = static_cast<char>('a' + i % 26);
  }
  const std::string path = files.directory() + "/upload.bin";
  std::ofstream(path, std::ios::binary) << upload;
  const std::string echoed =
      proxy.curl("--cacert " + files.ca_cert() + " --data-binary @" + path, "/upload");
  EXPECT_THAT(echoed, HasSubstr("body 8000000 " + std::to_string(TestUpstream::checksum(upload))));
  const std::string downloaded = files.directory() + "/download.bin";
  EXPECT_EQ(proxy.curl("--cacert " + files.ca_cert() + " -o " + downloaded, "/bytes/8000000"),
            "200");
  std::ifstream in(downloaded, std::ios::binary);
  const std::string body((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_EQ(body, upload) << "the same 'a'..'z' pattern, all 8 MB of it";
}

TEST(TlsListener, AParkedConnectionServesItsNextRequests) {
  const TestCertificates files;
  TlsProxy proxy(server_files(files), std::string(kForwardAll));
  TlsClient client(proxy.tls_port(), files.ca_cert());
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(client.send(get("/" + std::to_string(i))).result(), http::status::ok) << i;
    // Parked between requests: its TLS read was cancelled, and it waits for the socket.
    ASSERT_TRUE(holds_within(std::chrono::seconds(5), [&] {
      return proxy.parked_connections() == 1;
    })) << i;
  }
}

TEST(TlsListener, TunnelsAnUpgradedConnection) {
  const TestCertificates files;
  TlsProxy proxy(server_files(files), std::string(kForwardAll));
  TlsClient client(proxy.tls_port(), files.ca_cert());
  client.write(
      "GET /chat HTTP/1.1\r\nHost: a\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n");
  EXPECT_THAT(client.read_until("\r\n\r\n"),
              ::testing::StartsWith("HTTP/1.1 101 Switching Protocols\r\n"));
  for (const std::string_view message : {"hello", "frames are just bytes here"}) {
    client.write(message);
    EXPECT_EQ(client.read_until(message), message);
  }
}

TEST(TlsListener, ServesCleartextAndTlsFromOneProcess) {
  const TestCertificates files;
  TlsProxy proxy(server_files(files), std::string(kForwardAll));
  EXPECT_EQ(send_request(proxy.plain_port(), get("/")).result(), http::status::ok);
  EXPECT_THAT(send_request(proxy.plain_port(), get("/")).body(),
              HasSubstr("X-Forwarded-Proto: http\n"));
  EXPECT_THAT(proxy.curl("--cacert " + files.ca_cert() + " -o /dev/null"), "200");
  EXPECT_THAT(proxy.curl("--cacert " + files.other_ca_cert() + " -o /dev/null"),
              Not(::testing::EndsWith("200")))
      << "curl refuses a server its CA does not vouch for";
}

TEST(TlsListener, RefusesTls10And11AndTls12WhenTheMinimumIs13) {
  const TestCertificates files;
  TlsProxy proxy(server_files(files), std::string(kForwardAll));
  const std::string connect =
      "openssl s_client -connect 127.0.0.1:" + std::to_string(proxy.tls_port()) +
      " -brief </dev/null 2>&1";
  for (const char* old : {"-tls1", "-tls1_1"}) {
    // Debian's OpenSSL allows TLS < 1.2 only at security level 0.
    EXPECT_THAT(output_of("timeout 5 " + connect + " " + old + " -cipher DEFAULT@SECLEVEL=0"),
                HasSubstr("alert protocol version"))
        << old;
  }
  EXPECT_THAT(output_of("timeout 5 " + connect + " -tls1_2"),
              HasSubstr("Protocol version: TLSv1.2"));
  EXPECT_THAT(output_of("/usr/bin/python3 -c \"import ssl,socket; c=ssl.create_default_context(); "
                        "c.check_hostname=False; c.verify_mode=ssl.CERT_NONE; "
                        "c.maximum_version=ssl.TLSVersion.TLSv1_1; "
                        "c.minimum_version=ssl.TLSVersion.TLSv1; "
                        "s=c.wrap_socket(socket.create_connection(('127.0.0.1'," +
                        std::to_string(proxy.tls_port()) + "))); print('connected')\" 2>&1"),
              Not(HasSubstr("connected")));

  TlsProxy strict(server_files(files) + ", min_version: \"1.3\"", std::string(kForwardAll));
  const std::string strict_connect =
      "timeout 5 openssl s_client -connect 127.0.0.1:" + std::to_string(strict.tls_port()) +
      " -brief </dev/null 2>&1";
  EXPECT_THAT(output_of(strict_connect + " -tls1_2"), HasSubstr("alert protocol version"));
  EXPECT_THAT(output_of(strict_connect), HasSubstr("Protocol version: TLSv1.3"));
}

TEST(TlsListener, TestsslFindsNoWeaknessInTheDefaults) {
  // testssl.sh (Debian's) on a default listener: its protocols, cipher preferences and
  // vulnerability checks (LUCKY13, SWEET32, BEAST, ROBOT, ...). Every finding it grades LOW or
  // worse fails the test (with OpenSSL's default TLS 1.2 suites, LUCKY13 is one). (Its certificate
  // and OCSP checks are left out: the test CA's certificates are self-made, and sluice does not
  // staple OCSP yet.)
  const TestCertificates files;
  TlsProxy proxy(server_files(files), std::string(kForwardAll));
  const std::string report = files.directory() + "/testssl.json";
  output_of("timeout 300 testssl --quiet --color 0 --warnings off -p -P -U --jsonfile " + report +
            " 127.0.0.1:" + std::to_string(proxy.tls_port()) + " >/dev/null 2>&1");
  std::ifstream in(report);
  std::stringstream text;
  text << in.rdbuf();
  boost::system::error_code ec;
  const boost::json::value findings = boost::json::parse(text.str(), ec);
  ASSERT_FALSE(ec) << "testssl wrote no report: " << text.str();
  std::size_t checked = 0;
  for (const boost::json::value& finding : findings.as_array()) {
    const std::string_view severity = finding.at("severity").as_string();
    ++checked;
    // (WARN is testssl's note on its own run, such as the engines of its openssl.)
    EXPECT_TRUE(severity != "LOW" && severity != "MEDIUM" && severity != "HIGH" &&
                severity != "CRITICAL")
        << finding.at("id").as_string() << ": " << severity << ": "
        << finding.at("finding").as_string();
  }
  EXPECT_GT(checked, 20u);  // it did run its checks
}

TEST(TlsListener, NegotiatesHttp11WithAlpnAndResumesSessionsWithTickets) {
  const TestCertificates files;
  TlsProxy proxy(server_files(files), std::string(kForwardAll));
  const std::string session = files.directory() + "/session.pem";
  const std::string connect =
      "printf 'GET / HTTP/1.1\\r\\nHost: x\\r\\nConnection: close\\r\\n\\r\\n' | "
      "timeout 5 openssl s_client -connect 127.0.0.1:" +
      std::to_string(proxy.tls_port()) + " -ign_eof -alpn http/1.1 ";
  const std::string first = output_of(connect + "-sess_out " + session + " 2>&1");
  EXPECT_THAT(first, HasSubstr("ALPN protocol: http/1.1"));
  EXPECT_THAT(first, HasSubstr("\nNew, TLSv1.3"));
  EXPECT_THAT(first, HasSubstr("HTTP/1.1 200 OK"));
  EXPECT_THAT(first, Not(HasSubstr("unexpected eof"))) << "closed with a close_notify";
  const std::string second = output_of(connect + "-sess_in " + session + " 2>&1");
  EXPECT_THAT(second, HasSubstr("\nReused, TLSv1.3"));
  EXPECT_THAT(second, HasSubstr("HTTP/1.1 200 OK"));
  EXPECT_EQ(proxy.metric("sluice_tls_handshakes_total{result=\"full\"}"),
            "sluice_tls_handshakes_total{result=\"full\"} 1");
  EXPECT_EQ(proxy.metric("sluice_tls_handshakes_total{result=\"resumed\"}"),
            "sluice_tls_handshakes_total{result=\"resumed\"} 1");
}

TEST(TlsListener, PlaintextGarbageAndStalledHandshakesCostOnlyTheirConnection) {
  const TestCertificates files;
  TlsProxy proxy(server_files(files), "timeouts: {header: 300ms}\n" + std::string(kForwardAll));
  RawClient plaintext(proxy.tls_port());
  plaintext.write("GET / HTTP/1.1\r\nHost: x\r\n\r\n");
  EXPECT_EQ(plaintext.read_until(""),
            "HTTP/1.1 400 Bad Request\r\nContent-Type: text/plain\r\nContent-Length: 50\r\n"
            "Connection: close\r\n\r\nThis port speaks HTTPS: send the request with TLS\n")
      << "told what it did wrong, in plain HTTP, then closed";
  RawClient garbage(proxy.tls_port());
  garbage.write(std::string("\x16\x03\x01\x00\x05garbage-and-more", 21));
  garbage.read_until("");
  RawClient stalled(proxy.tls_port());  // connects and never says anything
  EXPECT_THAT(proxy.curl("--cacert " + files.ca_cert() + " -o /dev/null"), "200")
      << "the others are served meanwhile";
  const auto start = std::chrono::steady_clock::now();
  stalled.read_until("");
  EXPECT_LT(std::chrono::steady_clock::now() - start, 2s) << "closed after the header timeout";
  // The stalled one is counted when its handshake ends, which its close may precede.
  EXPECT_TRUE(holds_within(5s, [&] {
    return proxy.metric("sluice_tls_handshakes_total{result=\"failed\"}") ==
           "sluice_tls_handshakes_total{result=\"failed\"} 3";
  })) << proxy.metric("sluice_tls_handshakes_total{result=\"failed\"}");
}

TEST(MutualTls, RequireRefusesAMissingOrForeignCertificateAndServesAGoodOne) {
  const TestCertificates files;
  TlsProxy proxy(server_files(files) + ", client_ca: " + files.ca_cert(), std::string(kForwardAll));
  const std::string trust = "--cacert " + files.ca_cert() + " -o /dev/null ";
  EXPECT_EQ(proxy.curl(trust), "000") << "no certificate: the handshake fails";
  EXPECT_EQ(proxy.curl(trust + "--cert " + files.foreign_client_cert() + " --key " +
                       files.foreign_client_key()),
            "000");
  EXPECT_EQ(proxy.curl(trust + "--cert " + files.client_cert(0) + " --key " + files.client_key(0)),
            "200");
}

TEST(MutualTls, OptionalServesClientsWithoutACertificateAndSkipsTheirCertificateLimiter) {
  const TestCertificates files;
  TlsProxy proxy(
      server_files(files) + ", client_ca: " + files.ca_cert() + ", client_cert: optional",
      "limiters: {per-cert: {algorithm: fixed_window, limit: 1, window: 1h, key: "
      "cert:fingerprint}}\nroutes: [{name: all, limiters: [per-cert]}]");
  const std::string trust = "--cacert " + files.ca_cert() + " -o /dev/null ";
  EXPECT_EQ(proxy.curl(trust), "200");
  EXPECT_EQ(proxy.curl(trust), "200") << "no certificate, no key: the limiter is skipped";
  const std::string client =
      trust + "--cert " + files.client_cert(0) + " --key " + files.client_key(0);
  EXPECT_EQ(proxy.curl(client), "200");
  EXPECT_EQ(proxy.curl(client), "429");
}

TEST(MutualTls, CertificateKeysLimitEachCertificateOnItsOwn) {
  const TestCertificates files;
  // Each key reads its field: the overrides name the values the certificates hold.
  TlsProxy proxy(
      server_files(files) + ", client_ca: " + files.ca_cert(),
      "limiters:\n"
      "  by-fingerprint: {algorithm: fixed_window, limit: 2, window: 1h, key: cert:fingerprint}\n"
      "  by-subject: {algorithm: fixed_window, limit: 100, window: 1h, key: cert:subject,\n"
      "               overrides: {\"CN=client-1,O=sluice-test\": {limit: 1}}}\n"
      "  by-san: {algorithm: fixed_window, limit: 100, window: 1h, key: cert:san,\n"
      "           overrides: {\"client-0.test\": {limit: 3}}}\n"
      "routes:\n"
      "  - {name: fingerprint, match: {path: /f}, limiters: [by-fingerprint]}\n"
      "  - {name: subject, match: {path: /s}, limiters: [by-subject]}\n"
      "  - {name: san, match: {path: /n}, limiters: [by-san]}\n");
  const auto as = [&](int i) {
    return "--cacert " + files.ca_cert() + " -o /dev/null --cert " + files.client_cert(i) +
           " --key " + files.client_key(i);
  };
  // One request after the other (the operands of + have no order): each status appended.
  const auto statuses = [&](std::initializer_list<std::pair<int, const char*>> requests) {
    std::string all;
    for (const auto& [client, path] : requests) {
      all += proxy.curl(as(client), path);
    }
    return all;
  };
  EXPECT_EQ(statuses({{0, "/f"}, {0, "/f"}, {0, "/f"}, {1, "/f"}}), "200200429200")
      << "client 1 has a count of its own";
  EXPECT_EQ(statuses({{1, "/s"}, {1, "/s"}, {0, "/s"}}), "200429200");
  EXPECT_EQ(statuses({{0, "/n"}, {0, "/n"}, {0, "/n"}, {0, "/n"}}), "200200200429");
}

TEST(TlsReload, RotatesTheCertificateWithoutDroppingAConnectionAndKeepsItOnBadFiles) {
  const TestCertificates files;
  TlsProxy proxy(server_files(files), std::string(kForwardAll));
  TlsClient kept(proxy.tls_port(), files.ca_cert());
  EXPECT_EQ(kept.send(get("/")).result(), http::status::ok);
  EXPECT_EQ(kept.server_fingerprint(), TestCertificates::fingerprint(files.server_cert()));

  const live::ReloadReport rotated = proxy.reload(
      "cert: " + files.server2_cert() + ", key: " + files.server2_key(), std::string(kForwardAll));
  ASSERT_TRUE(rotated.ok);
  EXPECT_EQ(kept.send(get("/")).result(), http::status::ok) << "the open connection goes on";
  TlsClient fresh(proxy.tls_port(), files.ca_cert());
  EXPECT_EQ(fresh.server_fingerprint(), TestCertificates::fingerprint(files.server2_cert()));

  const live::ReloadReport refused = proxy.reload(
      "cert: " + files.expired_cert() + ", key: " + files.expired_key(), std::string(kForwardAll));
  EXPECT_FALSE(refused.ok);
  ASSERT_EQ(refused.errors.size(), 1U);
  EXPECT_THAT(refused.errors[0], HasSubstr(files.expired_cert() + " expired on "));
  TlsClient after(proxy.tls_port(), files.ca_cert());
  EXPECT_EQ(after.server_fingerprint(), TestCertificates::fingerprint(files.server2_cert()))
      << "the last good certificate stays";
  EXPECT_EQ(after.send(get("/")).result(), http::status::ok);
}

TEST(TlsReload, StaplesItsOcspResponseAndKeepsTheLastGoodOneOnReload) {
  const TestCertificates files;
  const std::string good = files.ocsp_response(files.server_cert(), "good");
  TlsProxy proxy(server_files(files) + ", ocsp: " + good, std::string(kForwardAll));
  // s_client asks for the certificate's status and verifies the stapled answer against the CA.
  const std::string status =
      "timeout 5 openssl s_client -connect 127.0.0.1:" + std::to_string(proxy.tls_port()) +
      " -status -CAfile " + files.ca_cert() + " </dev/null 2>&1";
  std::string shown = output_of(status);
  EXPECT_THAT(shown, HasSubstr("OCSP Response Status: successful"));
  EXPECT_THAT(shown, HasSubstr("Cert Status: good"));
  EXPECT_THAT(shown, Not(HasSubstr("no response sent")));

  const std::string revoked = files.ocsp_response(files.server_cert(), "revoked", true);
  const live::ReloadReport refused =
      proxy.reload(server_files(files) + ", ocsp: " + revoked, std::string(kForwardAll));
  EXPECT_FALSE(refused.ok);
  ASSERT_EQ(refused.errors.size(), 1U);
  EXPECT_THAT(refused.errors[0],
              HasSubstr("tls.ocsp: " + revoked + " says the certificate is revoked"));
  EXPECT_THAT(output_of(status), HasSubstr("Cert Status: good")) << "the last good one stays";

  ASSERT_TRUE(proxy.reload(server_files(files), std::string(kForwardAll)).ok);
  EXPECT_THAT(output_of(status), HasSubstr("OCSP response: no response sent"));
}

/// The proxy's log lines, for what only the log says.
class LogLines {
 public:
  LogLines() : sink_(std::make_shared<spdlog::sinks::ringbuffer_sink_mt>(64)) {
    spdlog::default_logger()->sinks().push_back(sink_);
  }
  LogLines(const LogLines&) = delete;
  LogLines& operator=(const LogLines&) = delete;
  LogLines(LogLines&&) = delete;
  LogLines& operator=(LogLines&&) = delete;
  ~LogLines() {
    auto& sinks = spdlog::default_logger()->sinks();
    sinks.erase(std::remove(sinks.begin(), sinks.end(), sink_), sinks.end());
  }
  std::string all() const {
    std::string text;
    for (const std::string& line : sink_->last_formatted()) {
      text += line;
    }
    return text;
  }

 private:
  std::shared_ptr<spdlog::sinks::ringbuffer_sink_mt> sink_;
};

std::string https_upstream_config(const HttpsUpstream& upstream, const std::string& tls) {
  return "upstream: \"https://localhost:" + std::to_string(upstream.port()) +
         "\"\nupstream_tls: {" + tls + "}\nroutes: [{name: all}]";
}

TEST(HttpsUpstream, IsVerifiedWithSniAndKeptAlive) {
  const TestCertificates files;
  const HttpsUpstream upstream(files.server_cert(), files.server_key());
  TlsProxy proxy(server_files(files), https_upstream_config(upstream, "ca: " + files.ca_cert()));
  // One client connection, so both requests go through one event loop and its upstream pool;
  // TLS on both sides of the proxy.
  TlsClient client(proxy.tls_port(), files.ca_cert());
  const auto first = client.send(get("/one"));
  EXPECT_EQ(first.result(), http::status::ok);
  EXPECT_THAT(first.body(), HasSubstr("GET /one\n"));
  EXPECT_THAT(first.body(), HasSubstr("X-Forwarded-Proto: https\n"));
  EXPECT_THAT(first.body(), HasSubstr("connection 1\n"));
  const auto second = client.send(get("/two"));
  EXPECT_THAT(second.body(), HasSubstr("connection 1\n")) << "the TLS connection was pooled";
}

TEST(HttpsUpstream, AWrongCaOrNameIsA502WithALogLineThatSaysWhy) {
  const TestCertificates files;
  LogLines log;
  {
    const HttpsUpstream foreign(files.other_server_cert(), files.other_server_key());
    TlsProxy proxy(server_files(files), https_upstream_config(foreign, "ca: " + files.ca_cert()));
    EXPECT_EQ(send_request(proxy.plain_port(), get("/")).result(), http::status::bad_gateway);
    EXPECT_THAT(log.all(), HasSubstr("TLS handshake failed: certificate verify failed: unable to "
                                     "get local issuer certificate"));
  }
  {
    const HttpsUpstream misnamed(files.wrong_name_cert(), files.wrong_name_key());
    TlsProxy proxy(server_files(files), https_upstream_config(misnamed, "ca: " + files.ca_cert()));
    EXPECT_EQ(send_request(proxy.plain_port(), get("/")).result(), http::status::bad_gateway);
    EXPECT_THAT(log.all(), HasSubstr("certificate verify failed: hostname mismatch"));
  }
  {
    const HttpsUpstream misnamed(files.wrong_name_cert(), files.wrong_name_key());
    TlsProxy proxy(server_files(files),
                   https_upstream_config(
                       misnamed, "ca: " + files.ca_cert() + ", server_name: api.example.test"));
    EXPECT_EQ(send_request(proxy.plain_port(), get("/")).result(), http::status::ok)
        << "server_name names the certificate's host";
  }
  {
    const HttpsUpstream foreign(files.other_server_cert(), files.other_server_key());
    TlsProxy proxy(server_files(files), https_upstream_config(foreign, "verify: false"));
    EXPECT_EQ(send_request(proxy.plain_port(), get("/")).result(), http::status::ok)
        << "verify: false trusts any certificate";
  }
}

TEST(HttpsUpstream, ShowsItsClientCertificateToAnUpstreamThatAsksForOne) {
  const TestCertificates files;
  const HttpsUpstream upstream(files.server_cert(), files.server_key(), files.ca_cert());
  TlsProxy without(server_files(files), https_upstream_config(upstream, "ca: " + files.ca_cert()));
  EXPECT_EQ(send_request(without.plain_port(), get("/")).result(), http::status::bad_gateway);
  TlsProxy with(
      server_files(files),
      https_upstream_config(upstream, "ca: " + files.ca_cert() + ", cert: " + files.client_cert(1) +
                                          ", key: " + files.client_key(1)));
  const auto response = send_request(with.plain_port(), get("/"));
  EXPECT_EQ(response.result(), http::status::ok);
  EXPECT_THAT(response.body(),
              HasSubstr("client commonName=client-1,organizationName=sluice-test"));
}

}  // namespace
}  // namespace sluice::test
