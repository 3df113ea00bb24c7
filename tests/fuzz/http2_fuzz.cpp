// Bytes from an HTTP/2 client, after its connection preface, through the proxy's glue around
// nghttp2 (h2::Session) as a connection feeds it what each read returns: frames, HPACK, flow
// control, the stream states its callbacks build. The first input byte sets how the rest is
// split into reads. Every request that completes is turned into the HTTP/1.1 head the rest of
// the proxy reads (write_request_head) and answered: alternately with a small body lent through
// the stream, a body lent in two pieces, or a reset; request bodies are consumed as they come,
// so windows reopen. What the session sends is drained after every read, as the writer would.
// Checks: no crash, leak or undefined behaviour; an open stream is never past the stream cap;
// a stream's head is a request line, fields and a blank line.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <span>
#include <string_view>
#include <vector>

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
    sluice::http::HeadText head;
    h2::write_request_head(*stream, head);
    const std::string_view text(head.data(), head.size());
    require(text.ends_with("\r\n\r\n"), "a head ends with a blank line");
    require(text.find(" HTTP/1.1\r\n") != std::string_view::npos, "a head starts with a request");
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
