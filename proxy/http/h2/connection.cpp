#include "proxy/http/h2/connection.hpp"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/write.hpp>
#include <string_view>

#include "proxy/http/message_parser.hpp"

namespace sluice::http::h2 {

SessionLimits limits_of(const config::ProxyConfig& config) {
  SessionLimits limits;
  limits.max_concurrent_streams = config.http2.max_concurrent_streams;
  limits.max_header_list_bytes = kMaxHeaderBytes;
  return limits;
}

io::Awaitable<void> serve_http2(OpenPtr open, LoopContext& loop) {
  co_await Connection::serve(std::make_shared<Connection>(std::move(open), loop));
}

Connection::Connection(OpenPtr open, LoopContext& loop)
    : open_(std::move(open)),
      loop_(loop),
      session_(limits_of(*open_->generation->config), *this, open_->client.stream.get_executor()),
      output_(open_->client.stream.get_executor()) {
  out_.reserve(kWriteBatch);
}

io::Awaitable<void> Connection::serve(std::shared_ptr<Connection> connection) {
  connection->loop_.proxy.metrics.count_http2_connection();
  net::co_spawn(connection->client().stream.get_executor(), connection->write_frames(),
                net::detached);
  co_await connection->read_frames();
}

void Connection::on_request(const std::shared_ptr<RequestStream>& stream) {
  served_one_ = true;
  follow_reloads(open_->generation, loop_);  // each stream is served with the live config
  net::co_spawn(client().stream.get_executor(), serve_stream(shared_from_this(), stream),
                net::detached);
}

void Connection::on_goaway_sent(std::uint32_t error_code) {
  loop_.proxy.metrics.count_http2_goaway(error_code);
}

void Connection::stream_done() {
  if (open_->draining.load(std::memory_order_relaxed) && !going_away_) {
    going_away_ = true;
    session_.go_away();
  }
  flush();
}

/// One deadline for the connection's reads and writes (io::Stream has one): between requests,
/// `timeouts.header` until the first and `timeouts.idle` after; while a header block is
/// incomplete, `timeouts.header`; while streams are open, long enough for their upstreams (each
/// stream times its own waits).
void Connection::refresh_deadline() {
  const config::Timeouts& timeouts = generation()->config->timeouts;
  io::Stream& stream = client().stream;
  if (session_.header_block_open() || !served_one_) {
    stream.expires_after(timeouts.header);
  } else if (session_.open_streams() == 0) {
    stream.expires_after(timeouts.idle);
  } else {
    stream.expires_after(timeouts.idle + timeouts.upstream);
  }
}

io::Awaitable<void> Connection::read_frames() {
  const std::shared_ptr<Connection> self = shared_from_this();
  std::array<char, 16 * 1024> buffer;
  ClientConnection& connection = client();
  while (!ended_) {
    refresh_deadline();
    connection.waiting = session_.open_streams() == 0;  // a drain may close it
    auto [ec, n] = co_await connection.stream.async_read_some(net::buffer(buffer), io::use_nothrow);
    connection.waiting = false;
    if (ec) {
      if (ec == net::error::operation_aborted && open_->draining.load(std::memory_order_relaxed) &&
          !ended_) {
        going_away_ = true;
        session_.go_away();  // a drain: say so, send it, and close
        reading_done_ = true;
        flush();
        co_return;
      }
      end();
      co_return;
    }
    if (!session_.receive(std::span<const char>(buffer.data(), n))) {
      reading_done_ = true;  // a connection error: what nghttp2 has to say goes out, then close
      flush();
      co_return;
    }
    if (open_->draining.load(std::memory_order_relaxed) && !going_away_) {
      going_away_ = true;
      session_.go_away();
    }
    flush();
    if (!session_.alive()) {
      reading_done_ = true;
      co_return;
    }
  }
}

io::Awaitable<void> Connection::write_frames() {
  const std::shared_ptr<Connection> self = shared_from_this();
  io::Stream& stream = client().stream;
  while (!ended_) {
    out_.clear();
    if (!session_.send_into(out_, kWriteBatch)) {
      break;
    }
    if (out_.empty()) {
      if (reading_done_ || !session_.alive()) {
        break;
      }
      co_await output_.wait();
      continue;
    }
    refresh_deadline();
    auto [ec, n] = co_await net::async_write(stream, net::buffer(out_), io::use_nothrow);
    if (ec) {
      break;
    }
  }
  end();
}

void Connection::end() {
  if (ended_) {
    return;
  }
  ended_ = true;
  session_.abandon();
  output_.notify();
  beast::error_code ignored;
  client().stream.socket().cancel(ignored);  // the reader stops; the socket closes with the last
                                             // owner (after a TLS goodbye, when it can)
}

}  // namespace sluice::http::h2
