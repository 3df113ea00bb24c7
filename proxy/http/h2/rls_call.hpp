#pragma once

#include <memory>
#include <string_view>

#include "proxy/http/h2/connection.hpp"
#include "proxy/http/request_state.hpp"

namespace sluice::http::h2 {

/// The path of Envoy's rate-limit service call (SPEC §11).
inline constexpr std::string_view kShouldRateLimitPath =
    "/envoy.service.ratelimit.v3.RateLimitService/ShouldRateLimit";

/// Serves one `ShouldRateLimit` call on the decision service's port (SPEC §11): reads its
/// request (one gRPC message), decides each descriptor with the limiter its `rls` rule names,
/// `hits_addend` the cost, all or nothing, through the proxy's store, and answers
/// `overall_code`, a status per descriptor and the RateLimit fields in
/// `response_headers_to_add`. A descriptor no rule maps to a limiter, and every descriptor of a
/// domain no `rls` entry names, is OK. A malformed call gets INVALID_ARGUMENT, never a crash.
io::Awaitable<void> serve_rls_call(std::shared_ptr<Connection> connection,
                                   std::shared_ptr<RequestStream> stream, RequestState& state);

}  // namespace sluice::http::h2
