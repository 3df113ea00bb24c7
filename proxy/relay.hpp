#pragma once

#include <boost/asio/awaitable.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

#include "config/proxy_config.hpp"
#include "proxy/pipeline.hpp"
#include "proxy/session.hpp"

namespace sluice::proxy {

/// Forwards the request whose header `parser` holds to `upstream` and the response back to the
/// client, streaming both bodies through a fixed buffer. Adds X-Forwarded-For / -Proto / -Host
/// and X-Request-Id, drops hop-by-hop fields, and adds the limit headers to the response.
/// An unreachable upstream answers 502, a slow one 504. Returns whether the client connection
/// may serve another request. Awaited at once by the session, so it may take references.
boost::asio::awaitable<bool> relay(
    boost::beast::tcp_stream& client, boost::beast::flat_buffer& client_buffer,
    boost::beast::http::request_parser<boost::beast::http::buffer_body>& parser,
    const boost::asio::ip::tcp::endpoint& peer, const config::Upstream& upstream,
    const Decision& decision, const SessionContext& context, bool keep_alive);

}  // namespace sluice::proxy
