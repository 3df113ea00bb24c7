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

/// Why an upstream exchange failed, for the 502/504 and `sluice_upstream_errors_total`.
enum class UpstreamFailure { none, connect, timeout, broken };
std::string_view name_of(UpstreamFailure failure) noexcept;

struct RelayOutcome {
  bool keep_alive = false;  ///< The client connection may serve another request.
  unsigned status = 0;      ///< The status the client got; 0 if it went away first.
  UpstreamFailure failure = UpstreamFailure::none;
  limiter::Duration upstream_time{};  ///< From sending the request to the response header.
};

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
