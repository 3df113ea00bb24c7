#pragma once

#include "proxy/admin/admin_response.hpp"
#include "proxy/http/loop_context.hpp"

namespace sluice::admin {

/// `GET /metrics`: every counter and gauge in Prometheus's text format.
AdminResponse metrics_page(const AdminRequest& request, const live::Generation& generation,
                           const http::LoopContext& context);

/// The event loops of all replicas holding leases on `store`, as it counts them: at least one.
std::uint64_t lease_holders_of(const store::Store& store);

}  // namespace sluice::admin
