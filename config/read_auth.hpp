#pragma once

#include <vector>

#include "config/proxy_config.hpp"
#include "config/yaml_reader.hpp"

namespace sluice::config {

/// The JWS algorithm names a provider may accept (SPEC §8). `none` is not one of them.
inline constexpr std::string_view kJwsAlgorithmNames[] = {
    "RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256",
    "ES384", "ES512", "EdDSA", "HS256", "HS384", "HS512"};

/// Reads `auth` (SPEC §8): its `jwt` providers, each with its issuer, audiences, allow-list of
/// algorithms, keys (`keys`, or `jwks` from a file or a URL), where tokens are read and which
/// claims go upstream. Key files are named here and read where the pipeline is built.
std::vector<JwtProviderConfig> read_auth(MapReader& top, ReadContext& context);

/// A route's `auth: {jwt: NAME, required: BOOL}`, its provider checked against `config`'s.
std::optional<RouteAuth> read_route_auth(MapReader& route, const ProxyConfig& config);

}  // namespace sluice::config
