#pragma once

#include "proxy/admin/admin_response.hpp"
#include "proxy/http/loop_context.hpp"

namespace sluice::admin {

/// The most keys `GET /top` lists for a limiter (`n`).
inline constexpr std::size_t kMaxTopKeys = 100;

/// `GET /top[?limiter=NAME][&n=20]` (SPEC §10): each limiter's heaviest keys over the last
/// minute, the most requested first, with their requests, limited requests and remaining
/// (peeked, consuming nothing). A secret key is shown as `hash:` and its 64-bit hash in hex, the
/// same as the access log's `key`. 404 for an unknown limiter or when `top_keys` is 0; 400 for
/// an `n` that is not a whole number from 1 to kMaxTopKeys.
AdminResponse top_keys(const AdminRequest& request, const live::Generation& generation,
                       const http::LoopContext& context);

}  // namespace sluice::admin
