#pragma once

#include "proxy/admin/admin_response.hpp"
#include "proxy/http/loop_context.hpp"

namespace sluice::admin {

/// `GET /limiters/NAME/KEY[?tier=VALUE]`: one key's state ({"remaining", "reset", "banned"}),
/// consuming nothing. NAME and KEY are percent-decoded; 404 for an unknown limiter.
AdminResponse limiter_state(const AdminRequest& request, const live::Generation& generation,
                            const http::LoopContext& context);

}  // namespace sluice::admin
