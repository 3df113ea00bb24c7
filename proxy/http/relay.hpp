#pragma once

#include <boost/asio/awaitable.hpp>
#include <boost/asio/ip/tcp.hpp>

#include "config/proxy_config.hpp"
#include "proxy/http/beast_http.hpp"
#include "proxy/http/exchange.hpp"
#include "proxy/http/header_text.hpp"
#include "proxy/http/loop_context.hpp"
#include "proxy/http/message_parser.hpp"
#include "proxy/io/net.hpp"
#include "proxy/pipeline/pipeline.hpp"

namespace sluice::http {

/// Forwards the exchange's request (its header parsed, its body still in the client
/// connection) to its upstream and the response back to the client, streaming both bodies
/// through a fixed buffer, on a kept-alive upstream connection from the loop's pool when one is
/// parked. Adds X-Forwarded-For / -Proto / -Host and X-Request-Id, drops hop-by-hop fields,
/// answers `Expect: 100-continue` itself, tunnels an upgrade the upstream accepts (101), and
/// adds the limit headers to the response. An unreachable upstream answers 502, a slow one 504.
/// Awaited at once by the session, so it may take references.
io::Awaitable<RelayOutcome> relay(ClientConnection& downstream, const Exchange& exchange,
                                  LoopContext& loop);

}  // namespace sluice::http
