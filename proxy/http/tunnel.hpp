#pragma once

#include <boost/asio/awaitable.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core/flat_buffer.hpp>

#include "limiter/clock.hpp"
#include "proxy/io/net.hpp"
#include "proxy/io/stream.hpp"

namespace sluice::http {

/// Copies bytes both ways between an upgraded client connection (WebSocket, or any protocol a
/// 101 switched to) and its upstream, until either side closes or nothing moves for `idle`.
/// `client_early` and `upstream_early` hold bytes already read past the HTTP headers; they are
/// delivered first. Either stream may carry TLS.
io::Awaitable<void> tunnel(io::Stream& client, boost::beast::flat_buffer& client_early,
                           io::Stream& upstream, boost::beast::flat_buffer& upstream_early,
                           limiter::Duration idle);

}  // namespace sluice::http
