#pragma once

#include <string_view>

#include "proxy/admin/admin_response.hpp"
#include "proxy/http/loop_context.hpp"

namespace sluice::admin {

/// What the page and its files may load and run: only themselves, from the admin port (no
/// inline script or style, no other origin), and no page may frame them.
inline constexpr std::string_view kPagePolicy =
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'";

/// `GET /`: the operators' page (SPEC §10), its tables written here with the numbers of now, so
/// that it reads without JavaScript; its script (/page.js) then redraws them every second from
/// /stats and /top, with charts and the runtime controls. Every text shown is escaped.
AdminResponse operator_page(const AdminRequest& request, const live::Generation& generation,
                            const http::LoopContext& context);

/// `GET /page.css`, `GET /page.js`: the page's files; nullopt-like 404 for another path.
AdminResponse page_file(const AdminRequest& request, std::string_view path);

}  // namespace sluice::admin
