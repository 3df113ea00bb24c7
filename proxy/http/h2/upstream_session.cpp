#include "proxy/http/h2/upstream_session.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <array>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/write.hpp>
#include <cstring>
#include <new>
#include <string_view>

#include "config/url.hpp"
#include "proxy/http/relay_heads.hpp"
#include "proxy/tls/contexts.hpp"

namespace sluice::http::h2 {
namespace {

/// The receive windows asked of the upstream: what it may send ahead of the client.
constexpr std::int32_t kStreamWindow = 64 * 1024;
constexpr std::int32_t kConnectionWindow = 1024 * 1024;

/// Wakes a call whose stream is over.
void close(Call& call, std::uint32_t error_code) {
  call.closed = true;
  call.close_error = error_code;
  call.wake();
}

}  // namespace

UpstreamSession::UpstreamSession(UpstreamConnectionPtr connection, const config::Upstream&)
    : connection_(std::move(connection)), output_(connection_->stream.get_executor()) {
  nghttp2_session_callbacks* callbacks = nullptr;
  if (nghttp2_session_callbacks_new(&callbacks) != 0) {
    throw std::bad_alloc();
  }
  nghttp2_session_callbacks_set_on_header_callback(callbacks, &UpstreamSession::on_header);
  nghttp2_session_callbacks_set_on_frame_recv_callback(callbacks,
                                                       &UpstreamSession::on_frame_received);
  nghttp2_session_callbacks_set_on_data_chunk_recv_callback(callbacks, &UpstreamSession::on_data);
  nghttp2_session_callbacks_set_on_stream_close_callback(callbacks,
                                                         &UpstreamSession::on_stream_closed);
  nghttp2_option* option = nullptr;
  if (nghttp2_option_new(&option) != 0) {
    nghttp2_session_callbacks_del(callbacks);
    throw std::bad_alloc();
  }
  nghttp2_option_set_no_auto_window_update(option, 1);
  nghttp2_option_set_no_closed_streams(option, 1);
  const int made = nghttp2_session_client_new2(&session_, callbacks, this, option);
  nghttp2_option_del(option);
  nghttp2_session_callbacks_del(callbacks);
  if (made != 0) {
    throw std::bad_alloc();
  }
  const std::array<nghttp2_settings_entry, 2> settings{{
      {NGHTTP2_SETTINGS_ENABLE_PUSH, 0},
      {NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE, static_cast<std::uint32_t>(kStreamWindow)},
  }};
  nghttp2_submit_settings(session_, NGHTTP2_FLAG_NONE, settings.data(), settings.size());
  nghttp2_session_set_local_window_size(session_, NGHTTP2_FLAG_NONE, 0, kConnectionWindow);
  out_.reserve(kWriteBatch);
}

UpstreamSession::~UpstreamSession() {
  for (auto& [id, call] : calls_) {
    close(*call, NGHTTP2_CANCEL);
  }
  nghttp2_session_del(session_);
}

void UpstreamSession::start() {
  const io::Executor executor = connection_->stream.get_executor();
  net::co_spawn(executor, read_frames(), net::detached);
  net::co_spawn(executor, write_frames(), net::detached);
}

bool UpstreamSession::has_room() const noexcept {
  // Not ending, not told to go away, and below the upstream's SETTINGS_MAX_CONCURRENT_STREAMS.
  return !ended_ && nghttp2_session_want_read(session_) != 0 &&
         nghttp2_session_check_request_allowed(session_) != 0 &&
         calls_.size() <
             nghttp2_session_get_remote_settings(session_, NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS);
}

bool UpstreamSession::begin(const std::shared_ptr<Call>& call, std::span<const nghttp2_nv> fields,
                            bool with_body) {
  if (ended_) {
    return false;
  }
  nghttp2_data_provider body{};
  body.source.ptr = call.get();
  body.read_callback = &UpstreamSession::read_body;
  const std::int32_t id = nghttp2_submit_request(session_, nullptr, fields.data(), fields.size(),
                                                 with_body ? &body : nullptr, nullptr);
  if (id < 0) {
    return false;
  }
  call->id = id;
  calls_.emplace(id, call);
  output_.notify();
  return true;
}

void UpstreamSession::resume(Call& call) {
  if (!ended_ && !call.closed) {
    nghttp2_session_resume_data(session_, call.id);
    output_.notify();
  }
}

void UpstreamSession::consume(Call& call, std::size_t count) {
  if (!ended_) {
    nghttp2_session_consume(session_, call.id, count);
    output_.notify();
  }
}

void UpstreamSession::cancel(Call& call) {
  if (!call.closed && !ended_) {
    // Kept in calls_ until nghttp2 closes the stream: it may still read the call's body.
    nghttp2_submit_rst_stream(session_, NGHTTP2_FLAG_NONE, call.id, NGHTTP2_CANCEL);
    output_.notify();
  }
  call.closed = true;
}

Call* UpstreamSession::find(std::int32_t stream_id) noexcept {
  const auto found = calls_.find(stream_id);
  return found == calls_.end() ? nullptr : found->second.get();
}

io::Awaitable<void> UpstreamSession::read_frames() {
  const std::shared_ptr<UpstreamSession> self = shared_from_this();
  std::array<char, 16 * 1024> buffer;
  io::Stream& stream = connection_->stream;
  while (!ended_) {
    stream.expires_never();  // each call times its own wait
    auto [ec, n] = co_await stream.async_read_some(net::buffer(buffer), io::use_nothrow);
    if (ec || nghttp2_session_mem_recv(
                  session_, reinterpret_cast<const std::uint8_t*>(buffer.data()), n) < 0) {
      break;
    }
    output_.notify();
    if (nghttp2_session_want_read(session_) == 0 && nghttp2_session_want_write(session_) == 0) {
      break;
    }
  }
  end();
}

io::Awaitable<void> UpstreamSession::write_frames() {
  const std::shared_ptr<UpstreamSession> self = shared_from_this();
  io::Stream& stream = connection_->stream;
  while (!ended_) {
    out_.clear();
    while (out_.size() < kWriteBatch) {
      const std::uint8_t* data = nullptr;
      const ssize_t length = nghttp2_session_mem_send(session_, &data);
      if (length <= 0) {
        break;
      }
      out_.insert(out_.end(), data, data + length);
    }
    if (out_.empty()) {
      co_await output_.wait();
      continue;
    }
    auto [ec, n] = co_await net::async_write(stream, net::buffer(out_), io::use_nothrow);
    if (ec) {
      break;
    }
  }
  end();
}

void UpstreamSession::end() {
  if (ended_) {
    return;
  }
  ended_ = true;
  for (auto& [id, call] : calls_) {
    close(*call, NGHTTP2_CANCEL);
  }
  calls_.clear();
  output_.notify();
  beast::error_code ignored;
  connection_->stream.socket().close(ignored);
}

int UpstreamSession::on_header(nghttp2_session*, const nghttp2_frame* frame,
                               const std::uint8_t* name, std::size_t name_length,
                               const std::uint8_t* value, std::size_t value_length, std::uint8_t,
                               void* self) {
  Call* call = static_cast<UpstreamSession*>(self)->find(frame->hd.stream_id);
  if (call == nullptr || frame->hd.type != NGHTTP2_HEADERS) {
    return 0;
  }
  const std::string_view field = text_of(name, name_length);
  const std::string_view content = text_of(value, value_length);
  if (frame->headers.cat == NGHTTP2_HCAT_HEADERS && call->head_done) {
    call->trailers.add(field, content);
  } else if (field == ":status") {
    unsigned status = 0;
    for (const char digit : content) {
      status = status * 10 + static_cast<unsigned>(digit - '0');
    }
    call->head.set_status(status);
  } else {
    call->head.add(field, content);
  }
  return 0;
}

int UpstreamSession::on_frame_received(nghttp2_session*, const nghttp2_frame* frame, void* self) {
  Call* call = static_cast<UpstreamSession*>(self)->find(frame->hd.stream_id);
  if (call == nullptr) {
    return 0;
  }
  if (frame->hd.type == NGHTTP2_HEADERS && call->head.status() >= 200) {
    call->head_done = true;  // an interim response (1xx) is not passed on
  }
  if ((frame->hd.type == NGHTTP2_HEADERS || frame->hd.type == NGHTTP2_DATA) &&
      (frame->hd.flags & NGHTTP2_FLAG_END_STREAM) != 0) {
    call->body_done = true;
  }
  if (frame->hd.type == NGHTTP2_HEADERS && !call->head_done) {
    call->head.clear();  // forget the interim response's fields
  }
  call->wake();
  return 0;
}

int UpstreamSession::on_data(nghttp2_session* session, std::uint8_t, std::int32_t stream_id,
                             const std::uint8_t* data, std::size_t length, void* self) {
  Call* call = static_cast<UpstreamSession*>(self)->find(stream_id);
  if (call == nullptr || call->closed) {
    nghttp2_session_consume(session, stream_id, length);  // a cancelled call's
    return 0;
  }
  call->body.append(text_of(data, length));
  call->wake();
  return 0;
}

int UpstreamSession::on_stream_closed(nghttp2_session*, std::int32_t stream_id,
                                      std::uint32_t error_code, void* self) {
  auto& upstream = *static_cast<UpstreamSession*>(self);
  const auto found = upstream.calls_.find(stream_id);
  if (found == upstream.calls_.end()) {
    return 0;
  }
  const std::shared_ptr<Call> call = std::move(found->second);
  upstream.calls_.erase(found);
  close(*call, error_code);  // what it received is consumed as it is passed on, or dropped
  return 0;
}

ssize_t UpstreamSession::read_body(nghttp2_session*, std::int32_t, std::uint8_t* into,
                                   std::size_t length, std::uint32_t* flags,
                                   nghttp2_data_source* source, void*) {
  Call& call = *static_cast<Call*>(source->ptr);
  const std::size_t count = std::min(length, call.out.size());
  if (count > 0) {
    std::memcpy(into, call.out.data(), count);
    call.out = call.out.subspan(count);
  }
  if (call.out.empty()) {
    call.wake();  // drained: the relaying coroutine may lend the next bytes
    if (call.out_done) {
      *flags |= NGHTTP2_DATA_FLAG_EOF;
      return static_cast<ssize_t>(count);
    }
    if (count == 0) {
      return NGHTTP2_ERR_DEFERRED;
    }
  }
  return static_cast<ssize_t>(count);
}

io::Awaitable<std::shared_ptr<UpstreamSession>> UpstreamSessions::session_for(
    const config::Upstream& upstream, UpstreamPool& connections,
    boost::asio::ssl::context* tls_context, const config::UpstreamTls& tls,
    limiter::Duration connect_timeout, beast::error_code& error) {
  auto entry = std::find_if(entries_.begin(), entries_.end(),
                            [&](const Entry& known) { return known.url == upstream.url; });
  if (entry == entries_.end()) {
    entry = entries_.insert(entries_.end(), Entry{.url = upstream.url, .sessions = {}});
  }
  std::erase_if(entry->sessions, [](const auto& session) { return session->ended(); });
  for (const std::shared_ptr<UpstreamSession>& session : entry->sessions) {
    if (session->has_room()) {
      co_return session;
    }
  }
  UpstreamConnectionPtr connection =
      co_await connections.connect(upstream, tls_context, tls, connect_timeout, error);
  if (!connection) {
    co_return nullptr;
  }
  auto session = std::make_shared<UpstreamSession>(std::move(connection), upstream);
  session->start();
  // (The deque's other entries do not move; this one may have been found again meanwhile.)
  entry = std::find_if(entries_.begin(), entries_.end(),
                       [&](const Entry& known) { return known.url == upstream.url; });
  entry->sessions.push_back(session);
  co_return session;
}

io::Awaitable<BegunCall> begin_call(LoopContext& loop, const Exchange& exchange,
                                    const RequestHead& request, const ClientConnection& client,
                                    FieldList& fields, std::shared_ptr<io::Signal> signal,
                                    bool with_body, bool grpc) {
  const config::Upstream& upstream = exchange.upstream();
  const config::ProxyConfig& config = exchange.config();
  if (!loop.http2_upstreams) {
    loop.http2_upstreams = std::make_shared<UpstreamSessions>();
  }
  beast::error_code connect_error;
  std::shared_ptr<UpstreamSession> session = co_await loop.http2_upstreams->session_for(
      upstream, loop.pool, exchange.generation.tls->upstream.get(), config.upstream_tls,
      config.timeouts.connect, connect_error);
  if (!session) {
    co_return BegunCall{.session = nullptr, .call = nullptr, .failure = UpstreamFailure::connect};
  }
  FieldListOut out(fields, upstream.tls ? "https" : "http");
  write_upstream_head(request, exchange.decision.auth, client.peer_address_text,
                      client.stream.secure(), false, out);
  if (grpc) {
    fields.add("te", "trailers");  // gRPC servers want it; the HTTP/1.1 relay drops TE
  }
  auto call = std::make_shared<Call>(std::move(signal));
  if (!session->begin(call, fields.list(), with_body)) {
    co_return BegunCall{.session = nullptr, .call = nullptr, .failure = UpstreamFailure::broken};
  }
  co_return BegunCall{.session = std::move(session), .call = std::move(call)};
}

}  // namespace sluice::http::h2
