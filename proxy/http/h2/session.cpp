#include "proxy/http/h2/session.hpp"

#include <algorithm>
#include <array>
#include <cstring>
#include <new>
#include <string_view>

namespace sluice::http::h2 {
namespace {

/// nghttp2's options for a server facing the internet: windows reopen only as bodies are
/// passed on; the flood limits are nghttp2's defaults, said out loud so that they show.
struct Options {
  Options() {
    if (nghttp2_option_new(&option) != 0) {
      throw std::bad_alloc();
    }
    nghttp2_option_set_no_auto_window_update(option, 1);
    nghttp2_option_set_no_closed_streams(option, 1);    // no RFC 7540 priority tree to keep
    nghttp2_option_set_max_outbound_ack(option, 1000);  // SETTINGS and PING floods
    nghttp2_option_set_max_settings(option, 32);        // per SETTINGS frame
    nghttp2_option_set_max_continuations(option, 8);    // CONTINUATION floods
    nghttp2_option_set_stream_reset_rate_limit(option, 1000, 33);  // rapid reset
  }
  ~Options() { nghttp2_option_del(option); }
  Options(const Options&) = delete;
  Options& operator=(const Options&) = delete;
  Options(Options&&) = delete;
  Options& operator=(Options&&) = delete;

  nghttp2_option* option = nullptr;
};

/// The stream is over: its coroutine is told, and when it was reset (not answered whole: the
/// upstream connection is then still good for the next request), stops waiting on its upstream.
void close(RequestStream& stream, std::uint32_t error_code) {
  stream.closed = true;
  stream.close_error = error_code;
  if (stream.upstream != nullptr && error_code != NGHTTP2_NO_ERROR) {
    beast::error_code ignored;
    stream.upstream->socket().close(ignored);
    stream.upstream = nullptr;
  }
  stream.changed.notify();
}

}  // namespace

Session::Session(const SessionLimits& limits, SessionEvents& events, const io::Executor& executor)
    : events_(events), executor_(executor), max_header_list_bytes_(limits.max_header_list_bytes) {
  nghttp2_session_callbacks* callbacks = nullptr;
  if (nghttp2_session_callbacks_new(&callbacks) != 0) {
    throw std::bad_alloc();
  }
  nghttp2_session_callbacks_set_on_begin_headers_callback(callbacks, &Session::on_begin_headers);
  nghttp2_session_callbacks_set_on_header_callback(callbacks, &Session::on_header);
  nghttp2_session_callbacks_set_on_frame_recv_callback(callbacks, &Session::on_frame_received);
  nghttp2_session_callbacks_set_on_invalid_frame_recv_callback(callbacks,
                                                               &Session::on_invalid_frame);
  nghttp2_session_callbacks_set_on_data_chunk_recv_callback(callbacks, &Session::on_data);
  nghttp2_session_callbacks_set_on_stream_close_callback(callbacks, &Session::on_stream_closed);
  nghttp2_session_callbacks_set_on_frame_send_callback(callbacks, &Session::on_frame_sent);
  const Options options;
  const int made = nghttp2_session_server_new2(&session_, callbacks, this, options.option);
  nghttp2_session_callbacks_del(callbacks);
  if (made != 0) {
    throw std::bad_alloc();
  }
  const std::array<nghttp2_settings_entry, 4> settings{{
      {NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS, limits.max_concurrent_streams},
      {NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE, static_cast<std::uint32_t>(limits.stream_window)},
      {NGHTTP2_SETTINGS_MAX_HEADER_LIST_SIZE, limits.max_header_list_bytes},
      {NGHTTP2_SETTINGS_NO_RFC7540_PRIORITIES, 1},
  }};
  nghttp2_submit_settings(session_, NGHTTP2_FLAG_NONE, settings.data(), settings.size());
  nghttp2_session_set_local_window_size(session_, NGHTTP2_FLAG_NONE, 0, limits.connection_window);
}

Session::~Session() {
  abandon();
  nghttp2_session_del(session_);
}

void Session::abandon() {
  abandoned_ = true;
  for (auto& [id, stream] : streams_) {
    close(*stream, NGHTTP2_CANCEL);
  }
}

bool Session::receive(std::span<const char> bytes) {
  const ssize_t read = nghttp2_session_mem_recv(
      session_, reinterpret_cast<const std::uint8_t*>(bytes.data()), bytes.size());
  if (read == NGHTTP2_ERR_FLOODED || read == NGHTTP2_ERR_TOO_MANY_CONTINUATIONS ||
      read == NGHTTP2_ERR_TOO_MANY_SETTINGS) {
    // An abuse nghttp2 stops reading at: the client hears why before the close.
    nghttp2_session_terminate_session(session_, NGHTTP2_ENHANCE_YOUR_CALM);
  }
  return read >= 0;
}

bool Session::send_into(std::vector<char>& out, std::size_t limit) {
  if (abandoned_) {
    return false;
  }
  while (out.size() < limit) {
    const std::uint8_t* data = nullptr;
    const ssize_t length = nghttp2_session_mem_send(session_, &data);
    if (length < 0) {
      return false;
    }
    if (length == 0) {
      break;
    }
    out.insert(out.end(), data, data + length);
  }
  return true;
}

bool Session::alive() const noexcept {
  return !abandoned_ &&
         (nghttp2_session_want_read(session_) != 0 || nghttp2_session_want_write(session_) != 0);
}

void Session::respond(RequestStream& stream, std::span<const nghttp2_nv> fields, bool with_body) {
  if (stream.closed) {
    return;
  }
  nghttp2_data_provider body{};
  body.source.ptr = &stream;
  body.read_callback = &Session::read_body;
  nghttp2_submit_response(session_, stream.id, fields.data(), fields.size(),
                          with_body ? &body : nullptr);
}

void Session::resume(RequestStream& stream) {
  if (!stream.closed) {
    nghttp2_session_resume_data(session_, stream.id);
  }
}

void Session::consume(RequestStream& stream, std::size_t count) {
  if (!abandoned_) {
    // A closed stream's bytes still count against the connection's window.
    nghttp2_session_consume(session_, stream.id, count);
  }
}

void Session::reset(RequestStream& stream, std::uint32_t error_code) {
  if (!stream.closed) {
    nghttp2_submit_rst_stream(session_, NGHTTP2_FLAG_NONE, stream.id, error_code);
  }
}

void Session::go_away() {
  nghttp2_submit_goaway(session_, NGHTTP2_FLAG_NONE,
                        nghttp2_session_get_last_proc_stream_id(session_), NGHTTP2_NO_ERROR,
                        nullptr, 0);
}

RequestStream* Session::find(std::int32_t stream_id) noexcept {
  const auto found = streams_.find(stream_id);
  return found == streams_.end() ? nullptr : found->second.get();
}

int Session::on_begin_headers(nghttp2_session*, const nghttp2_frame* frame, void* self) {
  auto& session = *static_cast<Session*>(self);
  if (frame->hd.type == NGHTTP2_HEADERS && frame->headers.cat == NGHTTP2_HCAT_REQUEST) {
    session.streams_.emplace(frame->hd.stream_id, std::make_shared<RequestStream>(
                                                      session.executor_, frame->hd.stream_id));
    session.header_block_stream_ = frame->hd.stream_id;
  }
  return 0;
}

int Session::on_header(nghttp2_session*, const nghttp2_frame* frame, const std::uint8_t* name,
                       std::size_t name_length, const std::uint8_t* value, std::size_t value_length,
                       std::uint8_t, void* self) {
  auto& session = *static_cast<Session*>(self);
  RequestStream* stream = session.find(frame->hd.stream_id);
  if (stream == nullptr || frame->headers.cat != NGHTTP2_HCAT_REQUEST) {
    return 0;  // trailers of a request are not passed on to HTTP/1.1
  }
  // RFC 9113 §6.5.2 counts 32 bytes of overhead per field. Past the limit the rest is
  // dropped (nghttp2 still decodes it, within its HPACK table and CONTINUATION caps), and
  // the stream is answered 431.
  stream->header_bytes += name_length + value_length + 32;
  if (stream->too_large || stream->header_bytes > session.max_header_list_bytes_) {
    stream->too_large = true;
    return 0;
  }
  const std::string_view field = text_of(name, name_length);
  const std::string_view content = text_of(value, value_length);
  if (field == ":method") {
    stream->method = content;
  } else if (field == ":scheme") {
    stream->scheme = content;
  } else if (field == ":authority") {
    stream->authority = content;
  } else if (field == ":path") {
    stream->path = content;
  } else if (field == "cookie") {
    if (!stream->cookie.empty()) {
      stream->cookie += "; ";
    }
    stream->cookie += content;
  } else {
    stream->add_field(field, content);
  }
  return 0;
}

int Session::on_frame_received(nghttp2_session*, const nghttp2_frame* frame, void* self) {
  auto& session = *static_cast<Session*>(self);
  if (frame->hd.type != NGHTTP2_HEADERS && frame->hd.type != NGHTTP2_DATA) {
    return 0;
  }
  const auto found = session.streams_.find(frame->hd.stream_id);
  if (found == session.streams_.end()) {
    return 0;
  }
  RequestStream& stream = *found->second;
  const bool ends = (frame->hd.flags & NGHTTP2_FLAG_END_STREAM) != 0;
  if (frame->hd.type == NGHTTP2_HEADERS && frame->headers.cat == NGHTTP2_HCAT_REQUEST) {
    session.header_block_stream_ = 0;
    stream.body_done = ends;
    const std::shared_ptr<RequestStream> request = found->second;  // the events may close it
    session.events_.on_request(request);
    return 0;
  }
  if (ends) {
    stream.body_done = true;
    stream.changed.notify();
  }
  return 0;
}

int Session::on_invalid_frame(nghttp2_session*, const nghttp2_frame* frame, int, void* self) {
  auto& session = *static_cast<Session*>(self);
  if (frame->hd.stream_id == session.header_block_stream_) {
    // Its request was refused (a field HTTP/2 forbids, a pseudo-header field missing): nghttp2
    // resets the stream and skips the rest of the block, and no frame_received comes for it.
    session.header_block_stream_ = 0;
  }
  return 0;
}

int Session::on_frame_sent(nghttp2_session*, const nghttp2_frame* frame, void* self) {
  auto& session = *static_cast<Session*>(self);
  if (frame->hd.type == NGHTTP2_GOAWAY) {
    session.events_.on_goaway_sent(frame->goaway.error_code);
  } else if ((frame->hd.type == NGHTTP2_HEADERS || frame->hd.type == NGHTTP2_DATA) &&
             (frame->hd.flags & NGHTTP2_FLAG_END_STREAM) != 0) {
    if (RequestStream* stream = session.find(frame->hd.stream_id)) {
      stream->answered = true;
      stream->changed.notify();
    }
  }
  return 0;
}

int Session::on_data(nghttp2_session*, std::uint8_t, std::int32_t stream_id,
                     const std::uint8_t* data, std::size_t length, void* self) {
  auto& session = *static_cast<Session*>(self);
  RequestStream* stream = session.find(stream_id);
  if (stream != nullptr) {
    stream->body_received += length;
  }
  if (stream == nullptr || stream->discard_body) {
    // Not wanted: its window reopens at once, so the client can finish sending it.
    nghttp2_session_consume(session.session_, stream_id, length);
    return 0;
  }
  stream->body.append(text_of(data, length));
  stream->changed.notify();
  return 0;
}

int Session::on_stream_closed(nghttp2_session*, std::int32_t stream_id, std::uint32_t error_code,
                              void* self) {
  auto& session = *static_cast<Session*>(self);
  if (stream_id == session.header_block_stream_) {
    session.header_block_stream_ = 0;  // closed before its header block was over
  }
  const auto found = session.streams_.find(stream_id);
  if (found == session.streams_.end()) {
    return 0;
  }
  RequestStream& stream = *found->second;
  close(stream, error_code);
  if (!stream.body.empty()) {
    // Received and never passed on: the connection's window gets it back.
    nghttp2_session_consume_connection(session.session_, stream.body.size());
    stream.body.clear();
  }
  session.streams_.erase(found);
  return 0;
}

ssize_t Session::read_body(nghttp2_session* session, std::int32_t stream_id, std::uint8_t* into,
                           std::size_t length, std::uint32_t* flags, nghttp2_data_source* source,
                           void*) {
  RequestStream& stream = *static_cast<RequestStream*>(source->ptr);
  const std::size_t count = std::min(length, stream.out.size());
  if (count > 0) {
    std::memcpy(into, stream.out.data(), count);
    stream.out = stream.out.subspan(count);
  }
  if (stream.out.empty()) {
    stream.changed.notify();  // drained: the serving coroutine may lend the next bytes
    if (stream.out_done) {
      *flags |= NGHTTP2_DATA_FLAG_EOF;
      if (stream.trailers != nullptr && !stream.trailers->empty()) {
        // The trailers end the stream instead (nghttp2 allows submitting them from here).
        *flags |= NGHTTP2_DATA_FLAG_NO_END_STREAM;
        nghttp2_submit_trailer(session, stream_id, stream.trailers->data(),
                               stream.trailers->size());
      }
      return static_cast<ssize_t>(count);
    }
    if (count == 0) {
      return NGHTTP2_ERR_DEFERRED;
    }
  }
  return static_cast<ssize_t>(count);
}

}  // namespace sluice::http::h2
