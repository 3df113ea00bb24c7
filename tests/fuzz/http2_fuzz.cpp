// Bytes from an HTTP/2 client, after its connection preface, through the proxy's glue around
// nghttp2 (h2::Session) as a connection feeds it what each read returns: frames, HPACK, flow
// control, the stream states its callbacks build. The first input byte sets how the rest is
// split into reads. Every request that completes is read as the exchange reads it
// (read_request_head), written as an HTTP/2 upstream would get it, and answered: alternately
// with a small body lent through
// the stream, a body lent in two pieces, or a reset; request bodies are consumed as they come,
// so windows reopen. What the session sends is drained after every read, as the writer would.
// Checks: no crash, leak or undefined behaviour; an open stream is never past the stream cap;
// a request read is one the upstream's field list can start with its pseudo-header fields.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <span>
#include <string_view>
#include <vector>

#include "proxy/http/h2/request_head.hpp"
#include "proxy/http/h2/session.hpp"
#include "proxy/http/h2/translate.hpp"

namespace {

namespace h2 = sluice::http::h2;

constexpr std::uint32_t kMaxStreams = 4;

void require(bool condition, const char* what) {
  if (!condition) {
    std::fprintf(stderr, "http2_fuzz: %s\n", what);
    std::abort();
  }
}

/// Answers what the session reports, as the proxy's streams would, without a socket.
class Answering final : public h2::SessionEvents {
 public:
  void on_request(const std::shared_ptr<h2::RequestStream>& stream) override {
    require(session != nullptr, "a request before the session was made");
    if (!stream->too_large &&
        h2::read_request_head(*stream, head_fields, head) == sluice::http::status::ok) {
      require(!head.target.empty() && !head.method_string.empty(), "a request has a target");
      h2::FieldListOut upstream(fields, "http");
      sluice::http::write_upstream_head(head, {}, "192.0.2.1", false, false, upstream);
      require(fields.list().size() >= 4 && fields.list()[0].namelen == 7,
              "pseudo-header fields come first");
    }
    fields.read("HTTP/1.1 200 OK\r\ncontent-type: text/plain\r\n\r\n");
    switch (answered++ % 3) {
      case 0:
        stream->out = std::span<const char>(kBody);
        stream->out_done = true;
        session->respond(*stream, fields.list(), true);
        break;
      case 1:
        stream->out = std::span<const char>(kBody).first(2);
        session->respond(*stream, fields.list(), true);
        pending.push_back(stream);  // the rest once the first piece is taken
        break;
      default:
        session->reset(*stream, NGHTTP2_CANCEL);
        break;
    }
    streams.push_back(stream);
  }

  void on_goaway_sent(std::uint32_t) override {}

  /// What the proxy's coroutines do between reads: pass bodies on, lend the rest of a response.
  void progress() {
    for (const auto& stream : streams) {
      if (!stream->body.empty()) {
        session->consume(*stream, stream->body.size());
        stream->body.clear();
      }
    }
    for (const auto& stream : pending) {
      if (stream->out.empty() && !stream->out_done) {
        stream->out = std::span<const char>(kBody).subspan(2);
        stream->out_done = true;
        session->resume(*stream);
      }
    }
  }

  static constexpr std::string_view kBody = "hello";
  h2::Session* session = nullptr;
  h2::FieldList fields;
  sluice::http::HeadFields head_fields;
  sluice::http::RequestHead head;
  std::vector<std::shared_ptr<h2::RequestStream>> streams;
  std::vector<std::shared_ptr<h2::RequestStream>> pending;
  unsigned answered = 0;
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) {
    return 0;
  }
  static constexpr std::string_view kPreface = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
  const std::size_t piece = 1 + data[0] % 64;
  const std::string_view input(reinterpret_cast<const char*>(data + 1), size - 1);
  boost::asio::io_context io;
  Answering events;
  h2::SessionLimits limits;
  limits.max_concurrent_streams = kMaxStreams;
  limits.max_header_list_bytes = 2048;
  h2::Session session(limits, events, io.get_executor());
  events.session = &session;
  std::vector<char> out;
  bool alive = session.receive(kPreface);
  for (std::size_t at = 0; alive && at < input.size(); at += piece) {
    alive = session.receive(input.substr(at, piece));
    events.progress();
    require(session.open_streams() <= kMaxStreams + 1, "streams past the cap stay open");
    out.clear();
    alive = session.send_into(out, 1 << 20) && alive;
  }
  return 0;
}
