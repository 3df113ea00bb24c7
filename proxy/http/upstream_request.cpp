#include "proxy/http/upstream_request.hpp"

#include <optional>

#include "proxy/http/message_read.hpp"
#include "proxy/io/socket_io.hpp"
#include "proxy/tls/contexts.hpp"

namespace sluice::http {

UpstreamFailure failure_of(const beast::error_code& ec) noexcept {
  return ec == beast::error::timeout ? UpstreamFailure::timeout : UpstreamFailure::broken;
}

io::Awaitable<UpstreamRequest> request_upstream(LoopContext& loop, const Exchange& exchange,
                                                bool repeatable, RequestWriter& writer,
                                                UpstreamConnectionPtr& connection,
                                                std::chrono::steady_clock::time_point& sent_at) {
  const config::Upstream& upstream = exchange.upstream();
  const config::Timeouts& timeouts = exchange.config().timeouts;
  for (bool first_try = true;; first_try = false) {
    writer.connected(nullptr);
    connection.reset();  // a stale parked connection is closed here
    if (first_try) {
      // A request that can be repeated skips the check for a closed parked connection: it is
      // sent again on a new one if that fails.
      connection = loop.pool.take_parked(upstream, /*check_open=*/!repeatable);
    }
    if (!connection) {
      beast::error_code connect_error;
      connection = co_await loop.pool.connect(upstream, exchange.generation.tls->upstream.get(),
                                              exchange.config().upstream_tls, timeouts.connect,
                                              connect_error);
    }
    if (!connection) {
      co_return UpstreamRequest{.failure = UpstreamFailure::connect};
    }
    writer.connected(&connection->stream);
    // Only an idempotent request is sent twice: the upstream may also have acted on it and died
    // before answering, and a POST must not be made twice (nginx repeats no POST, LOCK or PATCH
    // once sent either).
    const bool may_retry = first_try && connection->reused && repeatable;
    sent_at = std::chrono::steady_clock::now();
    const RequestWritten written = co_await writer.write(connection->stream, first_try);
    if (written.client_failed) {
      writer.connected(nullptr);
      co_return UpstreamRequest{.client_gone = true, .malformed = written.malformed};
    }
    if (written.error) {
      if (may_retry) {
        continue;
      }
      writer.connected(nullptr);
      co_return UpstreamRequest{.failure = failure_of(written.error)};
    }
    // The response's head, interim responses skipped; a HEAD's response has no body, whatever
    // its fields say. Read here rather than in a coroutine of its own: a frame fewer per request.
    beast::error_code header_error;
    bool sent_at_once = written.at_once;  // then the deadline counts from sent_at
    std::optional<ResponseParser>& response = connection->response;
    do {
      response.emplace(connection->response_head);
      response->header_limit(kMaxHeaderBytes);
      response->body_limit(boost::none);
      if (exchange.request.method == http::verb::head) {
        response->skip(true);
      }
      if (sent_at_once) {
        connection->stream.expires_at(
            sent_at + std::chrono::duration_cast<io::Stream::Clock::duration>(timeouts.upstream));
        sent_at_once = false;  // an interim response restarts the wait
      } else {
        connection->stream.expires_after(timeouts.upstream);
      }
      for (MessageRead read(connection->buffer, *response, MessageRead<false>::Until::header_done);
           read.wants_bytes(header_error);) {
        auto [error, n] = co_await connection->stream.async_read_some(read.room(), io::use_nothrow);
        read.received(n, error, header_error);
      }
    } while (!header_error && response->status() / 100 == 1 &&
             response->result() != http::status::switching_protocols);
    if (!header_error) {
      co_return UpstreamRequest{};
    }
    if (may_retry && connection->buffer.size() == 0 && header_error != beast::error::timeout) {
      continue;
    }
    writer.connected(nullptr);
    co_return UpstreamRequest{.failure = failure_of(header_error)};
  }
}

}  // namespace sluice::http
