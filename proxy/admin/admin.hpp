#pragma once

#include <boost/asio/awaitable.hpp>
#include <boost/asio/ip/tcp.hpp>

#include "proxy/http/loop_context.hpp"
#include "proxy/io/net.hpp"

namespace sluice::admin {

/// Serves one connection of the admin port (SPEC §5):
/// - `GET /healthz`: 200 while the process runs;
/// - `GET /readyz`: 200 while it accepts traffic, 503 once it drains;
/// - `GET /limiters/NAME/KEY`: one key's state ({"remaining", "reset", "banned"}), consuming
///   nothing. KEY is percent-decoded.
/// - runtime control (SPEC §10, see runtime_control.hpp): `DELETE`/`PUT /limiters/NAME/KEY`,
///   `GET /overrides`, `DELETE /overrides/NAME/KEY`, `GET /bans`, `PUT`/`DELETE /bans/IP`;
///   these writes and `POST /reload` need the admin_token (admin_auth.hpp).
/// Anything else: 404 (405 for other methods on known paths).
io::Awaitable<void> serve_admin(io::Socket socket, http::LoopContext& context);

}  // namespace sluice::admin
