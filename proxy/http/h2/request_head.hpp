#pragma once

#include "proxy/http/beast_http.hpp"
#include "proxy/http/h2/session.hpp"
#include "proxy/http/head_fields.hpp"
#include "proxy/http/request_head.hpp"

namespace sluice::http::h2 {

/// Reads the request of `stream` into `fields` and `head`, as the exchange reads every request:
/// :method, :path as the target, :authority as Host (it wins over a Host field), the regular
/// fields in order and the cookie crumbs joined (RFC 9113 §8.3.1, §8.2.3). nghttp2 has refused
/// what HTTP/2 forbids (connection-specific fields, CR, LF or NUL in a value, a missing or
/// malformed pseudo-header field, a bad Content-Length); this adds what the HTTP/1.1 parser
/// checks besides (message_parser.hpp): the target's bytes, a fragment, `*` other than for
/// OPTIONS, one valid Host, control characters in a value, and CONNECT refused. Returns
/// `status::ok`, or the status to refuse the request with (400, or 501 for CONNECT).
http::status read_request_head(const RequestStream& stream, HeadFields& fields, RequestHead& head);

}  // namespace sluice::http::h2
