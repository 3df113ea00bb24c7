#pragma once

#include <boost/asio/awaitable.hpp>
#include <boost/asio/ip/tcp.hpp>

#include "config/proxy_config.hpp"
#include "proxy/http/beast_http.hpp"
#include "proxy/http/header_text.hpp"
#include "proxy/http/message_parser.hpp"
#include "proxy/http/session_context.hpp"
#include "proxy/io/net.hpp"
#include "proxy/pipeline/pipeline.hpp"

namespace sluice::proxy {

/// Why an upstream exchange failed, for the 502/504 and `sluice_upstream_errors_total`.
enum class UpstreamFailure { none, connect, timeout, broken };
std::string_view name_of(UpstreamFailure failure) noexcept;

struct RelayOutcome {
  bool keep_alive = false;  ///< The client connection may serve another request.
  unsigned status = 0;      ///< The status the client got; 0 if it went away first.
  UpstreamFailure failure = UpstreamFailure::none;
  limiter::Duration upstream_time{};  ///< From sending the request to the response header.
};

/// Forwards the request whose header `parser` holds to `upstream` and the response back to the
/// client, streaming both bodies through a fixed buffer, on a kept-alive upstream connection
/// from this loop's pool when one is parked. Adds X-Forwarded-For / -Proto / -Host and
/// X-Request-Id, drops hop-by-hop fields, answers `Expect: 100-continue` itself, tunnels an
/// upgrade the upstream accepts (101), and adds the limit headers to the response.
/// An unreachable upstream answers 502, a slow one 504. Awaited at once by the session, so it
/// may take references.
/// `client_address` is the peer's address as text, for X-Forwarded-For; `head` is scratch space
/// for the message heads, kept by the session so a request allocates none.
Awaitable<RelayOutcome> relay(Stream& client, beast::flat_buffer& client_buffer,
                              RequestParser& parser, std::string_view client_address,
                              const config::Upstream& upstream, const Decision& decision,
                              const config::ProxyConfig& config, const SessionContext& context,
                              bool keep_alive, HeadText& head);

}  // namespace sluice::proxy
