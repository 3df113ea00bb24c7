#pragma once

#include <string>

#include "tests/support/temp_directory.hpp"

namespace sluice::test {

/// Certificates and keys for TLS tests, made by the real `openssl` CLI (ECDSA P-256 throughout:
/// the whole set takes about a tenth of a second) in a directory of their own, removed at the
/// end. Every leaf is valid from a day ago (a client's clock a little behind still accepts it) to
/// 30 days ahead, unless named otherwise. Construct it inside a test: TempDirectory names itself
/// after the running one. Throws std::runtime_error with the failing command and its output.
class TestCertificates {
 public:
  TestCertificates();

  /// The directory holding everything below.
  std::string directory() const { return directory_.path().string(); }

  /// The CA that signs everything trusted: tests give it to the side that verifies.
  std::string ca_cert() const { return file("ca.pem"); }

  /// For localhost: CN=localhost, SAN DNS:localhost and IP:127.0.0.1, signed by ca.
  std::string server_cert() const { return file("server.pem"); }
  std::string server_key() const { return file("server.key"); }
  /// The same names and CA with another key and serial: the certificate a rotation swaps in.
  std::string server2_cert() const { return file("server2.pem"); }
  std::string server2_key() const { return file("server2.key"); }

  /// A second CA, and a localhost certificate signed by it: one that ca does not vouch for.
  std::string other_ca_cert() const { return file("other-ca.pem"); }
  std::string other_server_cert() const { return file("other-server.pem"); }
  std::string other_server_key() const { return file("other-server.key"); }

  /// Signed by ca, but for api.example.test only: fails hostname checks for localhost.
  std::string wrong_name_cert() const { return file("wrong-name.pem"); }
  std::string wrong_name_key() const { return file("wrong-name.key"); }
  /// For localhost, signed by ca, valid from 2020-01-01 to 2020-01-02 only.
  std::string expired_cert() const { return file("expired.pem"); }
  std::string expired_key() const { return file("expired.key"); }
  /// A key that is not server_cert()'s.
  std::string mismatched_key() const { return file("mismatched.key"); }

  /// Client certificates (clientAuth) signed by ca, for i = 0 or 1: CN=client-i,O=sluice-test,
  /// SAN DNS:client-i.test; client 1 has URI:spiffe://test/client-1 after it.
  std::string client_cert(int i) const { return file("client-" + client(i) + ".pem"); }
  std::string client_key(int i) const { return file("client-" + client(i) + ".key"); }
  /// A client certificate (CN=foreign-client) signed by other_ca: mTLS must refuse it.
  std::string foreign_client_cert() const { return file("foreign-client.pem"); }
  std::string foreign_client_key() const { return file("foreign-client.key"); }

  /// An OCSP response from ca for the certificate in `cert` (one ca signed), made by `openssl
  /// ocsp` as ca's responder would answer (good for a day, from the CA's own database, signed
  /// by ca), written to NAME.der; its path. With `revoked`, ca revokes the certificate first;
  /// `signer` "other-ca" signs it with the other CA's key instead (a forgery).
  std::string ocsp_response(const std::string& cert, const std::string& name, bool revoked = false,
                            const std::string& signer = "ca") const;

  /// A localhost certificate signed by ca whose Authority Information Access names the OCSP
  /// responder at `responder` ("http://127.0.0.1:PORT"), as NAME.pem with NAME.key, and the file
  /// a listener serves, NAME-chain.pem (the certificate, then ca's): the path of that file.
  std::string server_cert_naming(const std::string& responder, const std::string& name) const;
  /// ca revokes the certificate in `cert` (in its database, which its responder reads).
  void revoke(const std::string& cert) const;

  /// The bytes of the file at `path` (a DER response, a request).
  static std::string bytes(const std::string& path);
  /// The SHA-256 fingerprint of the certificate in `path`: lower-case hex, no colons.
  static std::string fingerprint(const std::string& path);
  /// Its subject in RFC 2253 form, as `openssl x509 -subject` prints it ("CN=client-0,O=...").
  static std::string subject(const std::string& path);

 private:
  std::string file(const std::string& name) const { return (directory_.path() / name).string(); }
  static std::string client(int i);
  /// Runs `openssl ARGUMENTS` in the directory; its output.
  std::string openssl(const std::string& arguments) const;
  /// Makes NAME.key and NAME.pem for `subject` ("/O=.../CN=..."), with the subject alternative
  /// names `san` (none if empty) and the config's section `extensions`, signed by SIGNER.key
  /// (by its own key when SIGNER is NAME). `dates`: openssl ca's -startdate/-enddate/-days.
  /// With `extfile`, the section comes from that file rather than the config.
  void issue(const std::string& name, const std::string& subject, const std::string& san,
             const std::string& extensions, const std::string& signer, const std::string& dates,
             const std::string& extfile = "") const;

  TempDirectory directory_;
};

}  // namespace sluice::test
