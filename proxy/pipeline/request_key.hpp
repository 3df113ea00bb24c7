#pragma once

#include <string>
#include <string_view>

#include "config/proxy_config.hpp"
#include "proxy/auth/jwt_verifier.hpp"
#include "proxy/pipeline/request_view.hpp"

namespace sluice::pipeline {

/// Joins the parts of a composite key. It cannot occur in a valid header, cookie or client
/// address, so one client cannot forge another's composite key ("a+b"+"c" versus "a"+"b+c").
inline constexpr char kKeyPartSeparator = '\x1f';

/// Writes the text of `spec` for `request` into `out` (replacing it; `out` keeps its capacity,
/// so a reused string does not allocate). Returns false when a part cannot be formed (a header,
/// cookie or query parameter is missing, Authorization is not a bearer token, or there is no
/// verified token or it lacks the claim): the limiter is then skipped for this request (SPEC §2).
/// `identity` is the route's verified token, or null.
bool build_key(const config::KeySpec& spec, unsigned ipv6_prefix, const RequestView& request,
               const IpAddress& client, std::string_view route_name,
               const auth::VerifiedJwt* identity, std::string& out);

/// The value of cookie `name` in a Cookie header; nullopt when absent.
std::optional<std::string_view> cookie_value(std::string_view cookies, std::string_view name);
/// The raw value of query parameter `name` (not percent-decoded); nullopt when absent.
std::optional<std::string_view> query_value(std::string_view query, std::string_view name);
/// The token of `Authorization: Bearer TOKEN`; nullopt for any other scheme.
std::optional<std::string_view> bearer_token(std::string_view authorization);

}  // namespace sluice::pipeline
