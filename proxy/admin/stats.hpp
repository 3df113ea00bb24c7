#pragma once

#include <boost/json/object.hpp>
#include <cstdint>

#include "proxy/admin/admin_response.hpp"
#include "proxy/http/loop_context.hpp"

namespace sluice::admin {

/// What the operators' page shows (SPEC §10), as JSON: the requests per second by route and
/// decision sampled after sample number `since` (all ten minutes for 0), the routes' totals,
/// the limiters, the store's health, upstream errors, JWKS fetches, TLS and HTTP/2 counts,
/// connections, access log lines dropped and the last reload. Read from counters the request
/// path keeps anyway: asking costs the request path nothing.
boost::json::object stats(const live::Generation& generation, const http::LoopContext& context,
                          std::uint64_t since);

/// `GET /stats[?since=N]`: stats() as a response; a `since` that is not a number is a 400.
AdminResponse stats_page(const AdminRequest& request, const live::Generation& generation,
                         const http::LoopContext& context);

}  // namespace sluice::admin
