#pragma once

#include <chrono>
#include <string>

#include "proxy/http/beast_http.hpp"
#include "proxy/http/head_fields.hpp"
#include "proxy/http/header_text.hpp"
#include "proxy/http/loop_context.hpp"
#include "proxy/http/message_parser.hpp"
#include "proxy/http/responses.hpp"
#include "proxy/io/stream.hpp"
#include "proxy/live/generation.hpp"
#include "proxy/pipeline/ip_address.hpp"
#include "proxy/pipeline/pipeline.hpp"

namespace sluice::http {

/// What one client connection owns from its first request to its last. Its buffers keep their
/// capacity from one request to the next, so that a request allocates none.
struct ClientConnection {
  explicit ClientConnection(io::Socket socket, const pipeline::IpAddress& peer_address,
                            std::string peer_text)
      : stream(std::move(socket)), peer(peer_address), peer_address_text(std::move(peer_text)) {}

  io::Stream stream;
  beast::flat_buffer buffer{kMaxHeaderBytes};  ///< Bytes read from the client, not yet parsed.
  HeadFields request_head;                     ///< The current request's fields.
  pipeline::IpAddress peer;
  std::string peer_address_text;  ///< For X-Forwarded-For.
  OwnResponse own;                ///< An answer the proxy gives itself.
  HeadText relay_head;            ///< The heads of a relayed request and its response.
};

/// One request and its response: what the session decided, and what the relay and the
/// accounting need to know of it. Lives in the session's frame for one request.
struct Exchange {
  const live::Generation&
      generation;          ///< The configuration the request is served with, to the end.
  RequestParser& request;  ///< Its head parsed; its body still to come.
  pipeline::Decision decision;
  bool keep_alive = false;  ///< The client connection may serve another request after it.
  std::chrono::steady_clock::time_point started;

  const config::ProxyConfig& config() const noexcept { return *generation.config; }
  /// The route's upstream, or the default one.
  const config::Upstream& upstream() const noexcept {
    return decision.route->upstream ? *decision.route->upstream : *config().upstream;
  }
};

}  // namespace sluice::http
