#include "proxy/http/open_connection.hpp"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <chrono>

namespace sluice::http {
namespace {

/// How long a TLS connection that is done may take to say so (close_notify) before it closes.
constexpr std::chrono::seconds kTlsGoodbye{1};

/// Ends a TLS connection as TLS asks, with a close_notify alert (a client reading until the
/// close takes a close without one for a truncation attack, and OpenSSL reports it so), sent
/// within kTlsGoodbye.
io::Awaitable<void> say_goodbye(std::unique_ptr<OpenConnection> open) {
  io::Stream& stream = open->client.stream;
  stream.expires_after(kTlsGoodbye);
  co_await stream.async_tls_shutdown(io::use_nothrow);
}

}  // namespace

void CloseConnection::operator()(OpenConnection* open) const noexcept {
  io::Stream& stream = open->client.stream;
  if (stream.secure() && stream.tls_can_close_cleanly() && !stream.timed_out() &&
      !open->draining.load(std::memory_order_relaxed)) {
    net::co_spawn(stream.get_executor(), say_goodbye(std::unique_ptr<OpenConnection>(open)),
                  net::detached);
    return;
  }
  delete open;  // NOLINT: the owner of last resort
}

}  // namespace sluice::http
