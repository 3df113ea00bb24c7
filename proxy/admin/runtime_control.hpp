#pragma once

#include "proxy/admin/admin_response.hpp"
#include "proxy/http/loop_context.hpp"
#include "proxy/telemetry/metrics.hpp"

namespace sluice::admin {

/// Runtime control on the admin port (SPEC §10), shared by every replica of a store that shares
/// it (Redis: written there, seen by the others within a second), process-local in memory:
/// - `DELETE /limiters/NAME/KEY`: forgets the key's counts ({"limiter","key","reset":true});
/// - `PUT /limiters/NAME/KEY` `{"limit": 1000, "for": "1h"}`: the key counts with those of the
///   limiter's parameters for a while ({"limiter","key","parameters","expires_in"});
/// - `DELETE /overrides/NAME/KEY`: ends an override early;
/// - `PUT /bans/IP` `{"for": "10m"}` ({"ip","banned_for"}) and `DELETE /bans/IP`.
/// NAME and KEY are percent-decoded; a composite key's parts are joined with `+`. The caller has
/// checked that the write may go ahead (refuse_write) and found `action` (runtime_action). Each
/// write that is done is logged.
io::Awaitable<AdminResponse> runtime_write(const AdminRequest& request, http::LoopContext& context,
                                           telemetry::AdminAction action);

/// Which write `request` is, if it is one of runtime_write's.
std::optional<telemetry::AdminAction> runtime_action(const AdminRequest& request);

/// `GET /overrides`: {"overrides":[{"limiter","key","parameters","expires_in"}]}.
io::Awaitable<AdminResponse> overrides_list(const AdminRequest& request,
                                            http::LoopContext& context);
/// `GET /bans`: {"bans":[{"ip","banned_for"}]}, the bans set at runtime (those of `ban:` are
/// counted per client inside the limiter engine and not listed; GET /limiters/NAME/IP shows one).
io::Awaitable<AdminResponse> bans_list(const AdminRequest& request, http::LoopContext& context);

}  // namespace sluice::admin
