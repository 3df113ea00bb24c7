#include "tests/support/test_certificates.hpp"

#include <algorithm>
#include <array>
#include <atomic>
#include <cctype>
#include <ctime>
#include <fstream>
#include <iterator>
#include <stdexcept>

#include "tests/support/shell.hpp"

namespace sluice::test {
namespace {

// OpenSSL 3.0's `req -x509` and `x509 -req` cannot set notBefore (-not_before came in 3.4), so
// every certificate goes through `openssl ca`, which can, and which needs this config.
// unique_subject: server and server2 share a subject. copy_extensions: the SAN comes from the
// request, the rest from the section named on the command line.
constexpr const char* kConfig = R"([req]
distinguished_name = dn
[dn]

[ca]
default_ca = test_ca
[test_ca]
database = index.txt
new_certs_dir = .
rand_serial = yes
unique_subject = no
default_md = sha256
policy = any
copy_extensions = copy
[any]
commonName = optional

[ca_ext]
basicConstraints = critical, CA:TRUE
keyUsage = critical, keyCertSign, cRLSign
subjectKeyIdentifier = hash
[server_ext]
basicConstraints = critical, CA:FALSE
keyUsage = critical, digitalSignature
extendedKeyUsage = serverAuth
subjectKeyIdentifier = hash
authorityKeyIdentifier = keyid
[client_ext]
basicConstraints = critical, CA:FALSE
keyUsage = critical, digitalSignature
extendedKeyUsage = clientAuth
subjectKeyIdentifier = hash
authorityKeyIdentifier = keyid
)";

/// Tells the directories of two sets made in the same test apart.
std::atomic<int> g_sets{0};

/// What `command` prints (standard error too); throws it if the command fails. output_of gives
/// no exit status, so the shell appends it after a marker.
std::string run(const std::string& command) {
  const std::string out = output_of("{ " + command + "; } 2>&1; echo \"[exit $?]\"");
  const std::size_t marker = out.rfind("[exit ");
  if (marker == std::string::npos || out.compare(marker, 9, "[exit 0]\n") != 0) {
    throw std::runtime_error("command failed: " + command + "\n" + out);
  }
  return out.substr(0, marker);
}

std::string quoted(const std::string& text) { return "'" + text + "'"; }

/// Now less a day, as openssl ca's -startdate takes it (YYYYMMDDHHMMSSZ).
std::string a_day_ago() {
  const std::time_t then = std::time(nullptr) - 24 * 60 * 60;
  std::tm utc{};
  ::gmtime_r(&then, &utc);
  std::array<char, 16> text{};
  std::strftime(text.data(), text.size(), "%Y%m%d%H%M%SZ", &utc);
  return text.data();
}

/// The line `openssl x509 -noout ARGUMENTS` prints for `path`, from after `prefix`, no newline.
std::string x509_field(const std::string& path, const std::string& arguments,
                       const std::string& prefix) {
  std::string line = run("openssl x509 -noout " + arguments + " -in " + quoted(path));
  const std::size_t start = line.find(prefix);
  if (start == std::string::npos) {
    throw std::runtime_error("no " + prefix + " in: " + line);
  }
  line.erase(0, start + prefix.size());
  line.erase(line.find_last_not_of("\r\n") + 1);
  return line;
}

}  // namespace

TestCertificates::TestCertificates()
    : directory_("sluice-certs-" + std::to_string(g_sets.fetch_add(1))) {
  directory_.write("openssl.cnf", kConfig);
  directory_.write("index.txt", "");
  const std::string since = "-startdate " + a_day_ago();
  const std::string valid = since + " -days 30";  // -days counts from now, not from -startdate
  const std::string localhost = "DNS:localhost,IP:127.0.0.1";
  issue("ca", "/CN=sluice test CA", "", "ca_ext", "ca", since + " -days 3650");
  issue("other-ca", "/CN=sluice other CA", "", "ca_ext", "other-ca", since + " -days 3650");
  issue("server", "/CN=localhost", localhost, "server_ext", "ca", valid);
  issue("server2", "/CN=localhost", localhost, "server_ext", "ca", valid);
  issue("other-server", "/CN=localhost", localhost, "server_ext", "other-ca", valid);
  issue("wrong-name", "/CN=api.example.test", "DNS:api.example.test", "server_ext", "ca", valid);
  issue("expired", "/CN=localhost", localhost, "server_ext", "ca",
        "-startdate 20200101000000Z -enddate 20200102000000Z");
  issue("client-0", "/O=sluice-test/CN=client-0", "DNS:client-0.test", "client_ext", "ca", valid);
  issue("client-1", "/O=sluice-test/CN=client-1", "DNS:client-1.test,URI:spiffe://test/client-1",
        "client_ext", "ca", valid);
  issue("foreign-client", "/O=sluice-test/CN=foreign-client", "DNS:foreign-client.test",
        "client_ext", "other-ca", valid);
  openssl("genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out mismatched.key");
}

std::string TestCertificates::ocsp_response(const std::string& cert, const std::string& name,
                                            bool revoked, const std::string& signer) const {
  openssl("ocsp -issuer ca.pem -cert " + quoted(cert) + " -no_nonce -reqout " + name + ".req");
  if (revoked) {
    revoke(cert);
  }
  openssl("ocsp -index index.txt -CA ca.pem -rsigner " + signer + ".pem -rkey " + signer +
          ".key -ndays 1 -reqin " + name + ".req -respout " + name + ".der");
  return file(name + ".der");
}

std::string TestCertificates::server_cert_naming(const std::string& responder,
                                                 const std::string& name) const {
  directory_.write(name + ".cnf",
                   "[server_ext]\nbasicConstraints = critical, CA:FALSE\n"
                   "keyUsage = critical, digitalSignature\nextendedKeyUsage = serverAuth\n"
                   "subjectKeyIdentifier = hash\nauthorityKeyIdentifier = keyid\n"
                   "authorityInfoAccess = OCSP;URI:" +
                       responder + "\n");
  issue(name, "/CN=localhost", "DNS:localhost,IP:127.0.0.1", "server_ext", "ca",
        "-startdate " + a_day_ago() + " -days 30", name + ".cnf");
  run("cd " + quoted(directory()) + " && cat " + name + ".pem ca.pem > " + name + "-chain.pem");
  return file(name + "-chain.pem");
}

void TestCertificates::revoke(const std::string& cert) const {
  openssl("ca -config openssl.cnf -keyfile ca.key -cert ca.pem -revoke " + quoted(cert));
}

std::string TestCertificates::bytes(const std::string& path) {
  std::ifstream file(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(file), std::istreambuf_iterator<char>()};
}

std::string TestCertificates::fingerprint(const std::string& path) {
  // OpenSSL 3.0 prints "sha256 Fingerprint=AB:CD:...", 1.1 "SHA256 Fingerprint=...".
  std::string hex = x509_field(path, "-fingerprint -sha256", "Fingerprint=");
  std::erase(hex, ':');
  std::transform(hex.begin(), hex.end(), hex.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return hex;
}

std::string TestCertificates::subject(const std::string& path) {
  return x509_field(path, "-subject -nameopt RFC2253", "subject=");
}

std::string TestCertificates::client(int i) {
  if (i != 0 && i != 1) {
    throw std::out_of_range("there are client certificates 0 and 1, not " + std::to_string(i));
  }
  return std::to_string(i);
}

std::string TestCertificates::openssl(const std::string& arguments) const {
  return run("cd " + quoted(directory()) + " && openssl " + arguments);
}

void TestCertificates::issue(const std::string& name, const std::string& subject,
                             const std::string& san, const std::string& extensions,
                             const std::string& signer, const std::string& dates,
                             const std::string& extfile) const {
  openssl("req -config openssl.cnf -new -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes" +
          (" -keyout " + name + ".key -out " + name + ".csr -subj " + quoted(subject)) +
          (san.empty() ? "" : " -addext " + quoted("subjectAltName=" + san)));
  // -preserveDN: keeps O (which the policy does not name) and the order of the fields.
  openssl("ca -config openssl.cnf -batch -notext -preserveDN -in " + name + ".csr -out " + name +
          ".pem -keyfile " + signer + ".key" +
          (signer == name ? " -selfsign" : " -cert " + signer + ".pem") +
          (extfile.empty() ? "" : " -extfile " + extfile) + " -extensions " + extensions + " " +
          dates);
}

}  // namespace sluice::test
