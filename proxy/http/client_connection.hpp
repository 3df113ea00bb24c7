#pragma once

#include <boost/intrusive/list.hpp>
#include <chrono>
#include <memory>
#include <string>

#include "proxy/http/request_head.hpp"
#include "proxy/http/request_state.hpp"
#include "proxy/io/stream.hpp"
#include "proxy/pipeline/ip_address.hpp"
#include "proxy/pipeline/request_view.hpp"

namespace sluice::http {

/// What one client connection owns from its first request to its last: little, because it is
/// what an idle keep-alive connection costs (docs/benchmarks.md, "Memory per idle connection").
/// What serving requests takes is borrowed (`state`) while it has requests, and for a short while
/// after (see QuietConnections).
struct ClientConnection {
  using ListHook = boost::intrusive::list_member_hook<
      boost::intrusive::link_mode<boost::intrusive::auto_unlink>>;

  /// Takes over an accepted socket and reads its peer's address.
  explicit ClientConnection(io::Socket socket);

  io::Stream stream;
  pipeline::IpAddress peer;
  std::string peer_address_text;  ///< For X-Forwarded-For (no allocation for IPv4).
  /// The client's verified certificate, on a TLS listener that asks for one (`cert:` keys).
  std::unique_ptr<const pipeline::ClientCertificate> certificate;
  RequestState* state = nullptr;  ///< Borrowed while it serves requests; null while idle.
  bool waiting = false;  ///< Nothing in flight: it waits for a request (a drain may close it).
  ListHook listed;       ///< In its loop's list of open connections; leaves it when it goes.
  ListHook quiet;        ///< In its loop's `lingering` or `parked` list while it is quiet.
  std::chrono::steady_clock::time_point quiet_since;  ///< Its last answer's end, when quiet.
  bool parked = false;  ///< Its lingering wait was ended: it is to wait without its state.
  /// Accepted by the decision service (`decide`): its requests describe the requests to decide.
  bool decides = false;
};

/// What the pipeline sees of a request, from `client`.
inline pipeline::RequestView request_view(const RequestHead& request,
                                          const ClientConnection& client) noexcept {
  return {.method = request.method_string,
          .target = request.target,
          .host = request.head().value_of(http::field::host),
          .headers = request.head().headers(),
          .peer = client.peer,
          .certificate = client.certificate.get()};
}

/// One event loop's open client connections (no allocation to enter or leave it).
using ClientConnections = boost::intrusive::list<
    ClientConnection,
    boost::intrusive::member_hook<ClientConnection, ClientConnection::ListHook,
                                  &ClientConnection::listed>,
    boost::intrusive::constant_time_size<false>>;

/// One event loop's connections that have answered all they read and wait for their next
/// request, oldest first (by quiet_since). In LoopContext::lingering, those that still hold
/// their request state and coroutine: a busy keep-alive connection usually sends its next
/// request within microseconds, and waiting for it so costs nothing more than a read. One quiet
/// for longer is parked (park_quiet in session.hpp): its read is cancelled, its state given
/// back, and it moves to LoopContext::parked, where it waits with no frame and no timer of its
/// own: the loop's timer closes it when `timeouts.idle` has passed since its last answer.
using QuietConnections = boost::intrusive::list<
    ClientConnection,
    boost::intrusive::member_hook<ClientConnection, ClientConnection::ListHook,
                                  &ClientConnection::quiet>,
    boost::intrusive::constant_time_size<false>>;

}  // namespace sluice::http
