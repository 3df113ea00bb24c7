#pragma once

#include <chrono>

#include "proxy/http/client_connection.hpp"
#include "proxy/http/loop_context.hpp"
#include "proxy/http/message_parser.hpp"
#include "proxy/live/generation.hpp"
#include "proxy/pipeline/pipeline.hpp"

namespace sluice::http {

/// One request and its response: what the session decided, and what the relay and the
/// accounting need to know of it. Lives in the session's frame for one request; what it refers
/// to, in the connection's RequestState.
struct Exchange {
  const live::Generation&
      generation;          ///< The configuration the request is served with, to the end.
  RequestParser& request;  ///< Its head parsed; its body still to come.
  pipeline::Decision& decision;
  bool keep_alive = false;  ///< The client connection may serve another request after it.
  std::chrono::steady_clock::time_point started;

  const config::ProxyConfig& config() const noexcept { return *generation.config; }
  /// The route's upstream, or the default one.
  const config::Upstream& upstream() const noexcept {
    return decision.route->upstream ? *decision.route->upstream : *config().upstream;
  }
};

}  // namespace sluice::http
