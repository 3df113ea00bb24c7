#pragma once

#include <optional>
#include <string_view>

#include "config/proxy_config.hpp"
#include "proxy/admin/admin_response.hpp"

namespace sluice::admin {

/// Whether the admin port may take a write (SPEC §10: runtime control and POST /reload).
/// nullopt: it may. Else its refusal: with `admin_token` set, 401 (and `WWW-Authenticate:
/// Bearer`) unless the request carries `Authorization: Bearer TOKEN`; without one, 403 unless the
/// admin port listens on a loopback address. Reads need neither.
std::optional<AdminResponse> refuse_write(const AdminRequest& request,
                                          const config::ProxyConfig& config);

/// Equal texts, compared in a time that does not tell how much of them matched.
bool same_secret(std::string_view given, std::string_view expected) noexcept;

/// Whether `host` is a loopback address (127.0.0.0/8, ::1, `localhost`).
bool loopback_host(std::string_view host) noexcept;

}  // namespace sluice::admin
