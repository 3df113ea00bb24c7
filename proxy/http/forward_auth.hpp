#pragma once

#include <string>
#include <string_view>

#include "proxy/http/request_head.hpp"

namespace sluice::http {

/// The request a forward-auth check describes (SPEC §11): what the decision service decides in
/// its place. Its method, target and host come from the fields the gateways send:
/// `X-Forwarded-Method`, `-Uri`, `-Host` (Traefik's ForwardAuth, Caddy's forward_auth), or
/// nginx's `X-Original-Method` and `X-Original-URI` (`auth_request`, ingress-nginx's
/// `auth-url`); with neither, from the check itself, as Envoy's ext_authz HTTP check sends the
/// original request line and Host. Its other fields (X-Forwarded-For, for the client address
/// through `trusted_proxies`) are the check's. Views into the check's head.
struct DescribedRequest {
  std::string_view method;
  std::string_view target;  ///< Origin-form: path and query.
  std::string_view host;
  /// Empty when the fields describe one request; else why they do not, naming them (the
  /// detail of the check's 400). Made only then.
  std::string problem;
};

/// Reads the request that `check` describes. Fields that contradict each other (both spellings
/// of the method or the URI with different values, a field repeated with different values) or
/// that do not parse (a method that is no token, a URI that is no path, a host or proto that
/// is none) make a problem instead.
DescribedRequest describe(const RequestHead& check);

}  // namespace sluice::http
