#pragma once

#include <openssl/ssl.h>

#include <boost/system/error_code.hpp>
#include <optional>
#include <string>

#include "proxy/pipeline/request_view.hpp"

namespace sluice::tls {

/// What the `cert:` keys read of a client's verified certificate; nullopt when it sent none.
std::optional<pipeline::ClientCertificate> client_certificate(SSL* ssl);

/// Asks a server for `name` (SNI, unless it is an IP address) and has the handshake check that
/// its certificate is for it (a DNS name, or an IP address in its SANs).
void expect_server(SSL* ssl, const std::string& name);

/// Why a handshake failed, for the log: the certificate check's reason when that failed
/// ("certificate has expired", "hostname mismatch"), else the error's message.
std::string handshake_failure(SSL* ssl, const boost::system::error_code& error);

}  // namespace sluice::tls
