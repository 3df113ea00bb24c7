#pragma once

#include <boost/json/object.hpp>
#include <string>
#include <string_view>

#include "limiter/key_hash.hpp"
#include "proxy/http/beast_http.hpp"

namespace sluice::admin {

/// One request to the admin port, as its endpoints read it.
struct AdminRequest {
  const http::request<http::string_body>& message;
  std::string_view path;   ///< The target before `?`.
  std::string_view query;  ///< After `?`; empty without one.
  unsigned version = 11;
  bool keep_alive = true;
  std::string_view peer = {};  ///< The client's address, for the log of writes.
};

using AdminResponse = http::response<http::string_body>;

/// `%41` → `A`; `+` is kept (a composite key's separator).
std::string percent_decoded(std::string_view text);

/// How a secret key (a header's, a token's, a cookie's value) is shown: `hash:` and its hash as
/// 16 hex digits, the hash the access log prints as `key` (stable for the process's life).
std::string hashed_key_text(limiter::KeyHash key);

AdminResponse text_response(const AdminRequest& request, http::status status, std::string body,
                            std::string_view type = "text/plain");
/// `body` as JSON text on one line.
AdminResponse json_response(const AdminRequest& request, http::status status,
                            const boost::json::object& body);
/// An RFC 9457 problem: the status's title, and `detail` when there is one (what was wrong).
AdminResponse problem(const AdminRequest& request, http::status status,
                      std::string_view detail = {});

}  // namespace sluice::admin
