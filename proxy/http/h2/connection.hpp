#pragma once

#include <array>
#include <memory>
#include <vector>

#include "proxy/http/h2/session.hpp"
#include "proxy/http/h2/translate.hpp"
#include "proxy/http/loop_context.hpp"
#include "proxy/http/open_connection.hpp"
#include "proxy/io/signal.hpp"

namespace sluice::http::h2 {

/// One HTTP/2 client connection: its Session, a coroutine reading frames into it, one writing
/// what it has to send, and a coroutine per stream (serve_stream) that its requests start. The
/// readers, writers and streams share it; the client connection closes when the last lets go.
class Connection final : public SessionEvents, public std::enable_shared_from_this<Connection> {
 public:
  Connection(OpenPtr open, LoopContext& loop);

  /// Reads and writes until the client or the proxy ends the connection. The connection lives
  /// on while its streams finish.
  static io::Awaitable<void> serve(std::shared_ptr<Connection> connection);

  void on_request(const std::shared_ptr<RequestStream>& stream) override;
  void on_goaway_sent(std::uint32_t error_code) override;

  /// There are frames to send (a response, a window update): the writer wakes.
  void flush() { output_.notify(); }
  /// A stream is over: the writer may find the connection done, or a drain may end it.
  void stream_done();

  ClientConnection& client() noexcept { return open_->client; }
  const std::shared_ptr<const live::Generation>& generation() const noexcept {
    return open_->generation;
  }
  LoopContext& loop() noexcept { return loop_; }
  Session& session() noexcept { return session_; }
  /// Reused by the streams for their responses' fields (they submit them at once).
  FieldList& response_fields() noexcept { return fields_; }
  /// Whether the connection is gone: its streams stop.
  bool ended() const noexcept { return ended_; }

 private:
  io::Awaitable<void> read_frames();
  io::Awaitable<void> write_frames();
  void refresh_deadline();
  /// No more reading or writing: the streams are told, the socket closed.
  void end();

  OpenPtr open_;
  LoopContext& loop_;
  Session session_;
  io::Signal output_;
  std::vector<char> out_;
  FieldList fields_;
  bool reading_done_ = false;
  bool going_away_ = false;
  bool ended_ = false;
  bool served_one_ = false;  ///< A request came: the idle timeout applies from now on.
};

/// What every stream is: its request through the pipeline, then an answer of the proxy's own
/// or the upstream's. Holds its connection while it runs.
io::Awaitable<void> serve_stream(std::shared_ptr<Connection> connection,
                                 std::shared_ptr<RequestStream> stream);

/// Serves `open` as an HTTP/2 connection, from its connection preface on, until it ends.
io::Awaitable<void> serve_http2(OpenPtr open, LoopContext& loop);

/// SessionLimits from the configuration.
SessionLimits limits_of(const config::ProxyConfig& config);

}  // namespace sluice::http::h2
