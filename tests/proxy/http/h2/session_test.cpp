// The server side of an HTTP/2 connection (h2::Session) against a real nghttp2 client session in
// the same process: bytes pumped both ways through memory, no socket and no mocks.
#include "proxy/http/h2/session.hpp"

#include <gtest/gtest.h>
#include <nghttp2/nghttp2.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <chrono>
#include <cstring>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace sluice::http::h2 {
namespace {

/// A stream's regular fields as `name: value\r\n` lines, in order.
std::string lines_of(const RequestStream& stream) {
  std::string lines;
  for (const RequestStream::ReceivedField& field : stream.fields) {
    lines.append(stream.name_of(field)).append(": ").append(stream.value_of(field)).append("\r\n");
  }
  return lines;
}

using namespace std::chrono_literals;

/// Records every request the Session passes on.
class Recorder final : public SessionEvents {
 public:
  void on_request(const std::shared_ptr<RequestStream>& stream) override {
    streams.push_back(stream);
  }
  void on_goaway_sent(std::uint32_t error_code) override { goaways.push_back(error_code); }
  std::vector<std::shared_ptr<RequestStream>> streams;
  std::vector<std::uint32_t> goaways;  ///< The error codes of the GOAWAY frames it sent.
};

/// What the client saw of one of its streams.
struct Seen {
  std::string status;
  std::vector<std::pair<std::string, std::string>> headers;
  std::string body;
  bool closed = false;
  std::uint32_t error_code = 0;
};

/// An nghttp2 client session: requests out, what came back recorded per stream.
class Client {
 public:
  using Fields = std::vector<std::pair<std::string, std::string>>;

  /// How a request's body ends: with END_STREAM on its last DATA, with trailers, or not yet.
  enum class Ending { end_stream, trailers, kept_open };

  Client() { start(false); }
  ~Client() { nghttp2_session_del(session); }
  Client(const Client&) = delete;
  Client& operator=(const Client&) = delete;
  Client(Client&&) = delete;
  Client& operator=(Client&&) = delete;

  /// Starts over (before anything was sent) as a client whose windows reopen only as it
  /// consumes what it received, and whose streams' windows are `stream_window`.
  void restart_with_manual_window(std::uint32_t stream_window) {
    nghttp2_session_del(session);
    start(true, stream_window);
  }

  /// nghttp2's view of `fields` (valid while they are).
  static std::vector<nghttp2_nv> list_of(const Fields& fields) {
    std::vector<nghttp2_nv> list;
    for (const auto& [name, value] : fields) {
      list.push_back(
          nghttp2_nv{bytes(name), bytes(value), name.size(), value.size(), NGHTTP2_NV_FLAG_NONE});
    }
    return list;
  }

  /// A request with these fields; its body, if any, is `body` (kept by the client).
  std::int32_t request(const Fields& fields, const std::string* body = nullptr,
                       Ending ending = Ending::end_stream) {
    std::vector<nghttp2_nv> list = list_of(fields);
    nghttp2_data_provider provider{};
    if (body != nullptr) {
      bodies_.push_back(std::make_unique<Body>(Body{*body, 0, ending}));
      provider.source.ptr = bodies_.back().get();
      provider.read_callback = &Client::read_body;
    }
    return nghttp2_submit_request(session, nullptr, list.data(), list.size(),
                                  body != nullptr ? &provider : nullptr, nullptr);
  }

  /// A GET of `path`.
  std::int32_t get(const std::string& path = "/") {
    return request({{":method", "GET"}, {":scheme", "http"}, {":authority", "a"}, {":path", path}});
  }

  /// Everything the client has to send.
  std::string output() {
    std::string out;
    const std::uint8_t* data = nullptr;
    while (const ssize_t n = nghttp2_session_mem_send(session, &data)) {
      if (n < 0) {
        ADD_FAILURE() << "client send: " << nghttp2_strerror(static_cast<int>(n));
        break;
      }
      out.append(reinterpret_cast<const char*>(data), static_cast<std::size_t>(n));
    }
    return out;
  }

  void input(const std::vector<char>& bytes) {
    const ssize_t read = nghttp2_session_mem_recv(
        session, reinterpret_cast<const std::uint8_t*>(bytes.data()), bytes.size());
    EXPECT_EQ(read, static_cast<ssize_t>(bytes.size())) << nghttp2_strerror(static_cast<int>(read));
  }

  std::int32_t stream_window(std::int32_t id) const {
    return nghttp2_session_get_stream_remote_window_size(session, id);
  }
  std::int32_t connection_window() const { return nghttp2_session_get_remote_window_size(session); }

  nghttp2_session* session = nullptr;
  std::map<std::int32_t, Seen> seen;
  std::optional<std::uint32_t> goaway;
  std::int32_t goaway_last_stream = -1;

 private:
  struct Body {
    std::string bytes;
    std::size_t sent;
    Ending ending;
  };

  void start(bool manual_window, std::uint32_t stream_window = 65535) {
    nghttp2_session_callbacks* callbacks = nullptr;
    nghttp2_session_callbacks_new(&callbacks);
    nghttp2_session_callbacks_set_on_header_callback(callbacks, &Client::on_header);
    nghttp2_session_callbacks_set_on_data_chunk_recv_callback(callbacks, &Client::on_data);
    nghttp2_session_callbacks_set_on_stream_close_callback(callbacks, &Client::on_close);
    nghttp2_session_callbacks_set_on_frame_recv_callback(callbacks, &Client::on_frame);
    nghttp2_option* option = nullptr;
    nghttp2_option_new(&option);
    nghttp2_option_set_no_auto_window_update(option, manual_window ? 1 : 0);
    nghttp2_session_client_new2(&session, callbacks, this, option);
    nghttp2_option_del(option);
    nghttp2_session_callbacks_del(callbacks);
    const nghttp2_settings_entry window{NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE, stream_window};
    nghttp2_submit_settings(session, NGHTTP2_FLAG_NONE, &window, 1);
  }

  static std::uint8_t* bytes(const std::string& text) {
    return reinterpret_cast<std::uint8_t*>(const_cast<char*>(text.data()));
  }

  static int on_header(nghttp2_session*, const nghttp2_frame* frame, const std::uint8_t* name,
                       std::size_t name_length, const std::uint8_t* value, std::size_t value_length,
                       std::uint8_t, void* self) {
    Seen& seen = static_cast<Client*>(self)->seen[frame->hd.stream_id];
    std::string field(reinterpret_cast<const char*>(name), name_length);
    std::string content(reinterpret_cast<const char*>(value), value_length);
    if (field == ":status") {
      seen.status = content;
    } else {
      seen.headers.emplace_back(std::move(field), std::move(content));
    }
    return 0;
  }
  static int on_data(nghttp2_session*, std::uint8_t, std::int32_t stream_id,
                     const std::uint8_t* data, std::size_t length, void* self) {
    static_cast<Client*>(self)->seen[stream_id].body.append(reinterpret_cast<const char*>(data),
                                                            length);
    return 0;
  }
  static int on_close(nghttp2_session*, std::int32_t stream_id, std::uint32_t error_code,
                      void* self) {
    Seen& seen = static_cast<Client*>(self)->seen[stream_id];
    seen.closed = true;
    seen.error_code = error_code;
    return 0;
  }
  static int on_frame(nghttp2_session*, const nghttp2_frame* frame, void* self) {
    if (frame->hd.type == NGHTTP2_GOAWAY) {
      static_cast<Client*>(self)->goaway = frame->goaway.error_code;
      static_cast<Client*>(self)->goaway_last_stream = frame->goaway.last_stream_id;
    }
    return 0;
  }
  static ssize_t read_body(nghttp2_session* session, std::int32_t stream_id, std::uint8_t* into,
                           std::size_t length, std::uint32_t* flags, nghttp2_data_source* source,
                           void*) {
    Body& body = *static_cast<Body*>(source->ptr);
    const std::size_t count = std::min(length, body.bytes.size() - body.sent);
    std::memcpy(into, body.bytes.data() + body.sent, count);
    body.sent += count;
    if (body.sent < body.bytes.size()) {
      return static_cast<ssize_t>(count);
    }
    switch (body.ending) {
      case Ending::end_stream:
        *flags |= NGHTTP2_DATA_FLAG_EOF;
        break;
      case Ending::trailers: {
        *flags |= NGHTTP2_DATA_FLAG_EOF | NGHTTP2_DATA_FLAG_NO_END_STREAM;
        static const Fields trailers{{"grpc-status", "0"}, {"x-trailer", "t"}};
        const std::vector<nghttp2_nv> list = list_of(trailers);
        nghttp2_submit_trailer(session, stream_id, list.data(), list.size());
        break;
      }
      case Ending::kept_open:
        if (count == 0) {
          return NGHTTP2_ERR_DEFERRED;
        }
        break;
    }
    return static_cast<ssize_t>(count);
  }

  std::vector<std::unique_ptr<Body>> bodies_;
};

/// The head of a response with nothing else to say.
const Client::Fields kOk{{":status", "200"}};

class H2Session : public testing::Test {
 protected:
  /// The client's bytes to the server; whether there were any.
  bool client_to_server() {
    const std::string bytes = client.output();
    if (!bytes.empty()) {
      EXPECT_TRUE(server().receive(bytes)) << "the server ended the connection";
    }
    return !bytes.empty();
  }
  /// The server's bytes to the client; whether there were any.
  bool server_to_client() {
    std::vector<char> bytes;
    EXPECT_TRUE(server().send_into(bytes, 1 << 20));
    if (!bytes.empty()) {
      client.input(bytes);
    }
    return !bytes.empty();
  }
  /// Both ways until neither side has anything more to say.
  void pump() {
    for (int round = 0; round < 100; ++round) {
      const bool sent = client_to_server();
      if (!server_to_client() && !sent) {
        return;
      }
    }
    ADD_FAILURE() << "still talking after 100 rounds";
  }

  Session& server() {
    if (!session_) {
      session_ = std::make_unique<Session>(limits, events, io.get_executor());
    }
    return *session_;
  }

  /// Whether `stream` was notified since its last wait (forgets it, as a wait would).
  bool notified(RequestStream& stream) {
    bool woken = false;
    boost::asio::co_spawn(
        io, [&]() -> io::Awaitable<void> { woken = co_await stream.changed.wait_for(0ms); },
        boost::asio::detached);
    io.restart();
    io.run();
    return woken;
  }

  /// The one request the server has seen.
  RequestStream& only_stream() {
    EXPECT_EQ(events.streams.size(), 1U);
    return *events.streams.at(0);
  }

  boost::asio::io_context io;
  SessionLimits limits;
  Recorder events;
  Client client;

 private:
  std::unique_ptr<Session> session_;
};

TEST_F(H2Session, AdvertisesItsLimitsInItsSettings) {
  limits.max_concurrent_streams = 7;
  limits.max_header_list_bytes = 9000;
  limits.stream_window = 100'000;
  limits.connection_window = 500'000;
  pump();
  EXPECT_EQ(
      nghttp2_session_get_remote_settings(client.session, NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS),
      7U);
  EXPECT_EQ(
      nghttp2_session_get_remote_settings(client.session, NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE),
      100'000U);
  EXPECT_EQ(
      nghttp2_session_get_remote_settings(client.session, NGHTTP2_SETTINGS_MAX_HEADER_LIST_SIZE),
      9000U);
  EXPECT_EQ(
      nghttp2_session_get_remote_settings(client.session, NGHTTP2_SETTINGS_NO_RFC7540_PRIORITIES),
      1U);
  // The connection's window is opened past HTTP/2's initial 65,535 by a WINDOW_UPDATE.
  EXPECT_EQ(client.connection_window(), 500'000);
  EXPECT_TRUE(server().alive());
  EXPECT_EQ(server().open_streams(), 0U);
}

TEST_F(H2Session, PassesOnARequestsFieldsWithItsCookieCrumbsJoined) {
  const std::int32_t id = client.request({{":method", "GET"},
                                          {":scheme", "https"},
                                          {":authority", "api.test:8443"},
                                          {":path", "/items?page=2"},
                                          {"accept", "*/*"},
                                          {"cookie", "a=1"},
                                          {"x-tier", "gold"},
                                          {"cookie", "b=2"}});
  pump();
  RequestStream& stream = only_stream();
  EXPECT_EQ(stream.id, id);
  EXPECT_EQ(stream.method, "GET");
  EXPECT_EQ(stream.scheme, "https");
  EXPECT_EQ(stream.authority, "api.test:8443");
  EXPECT_EQ(stream.path, "/items?page=2");
  EXPECT_EQ(lines_of(stream), "accept: */*\r\nx-tier: gold\r\n");
  EXPECT_EQ(stream.cookie, "a=1; b=2");
  EXPECT_EQ(stream.header_bytes, (7 + 3 + 32) + (7 + 5 + 32) + (10 + 13 + 32) + (5 + 13 + 32) +
                                     (6 + 3 + 32) + (6 + 3 + 32) + (6 + 4 + 32) + (6 + 3 + 32));
  EXPECT_FALSE(stream.too_large);
  EXPECT_TRUE(stream.body_done) << "the header block ended the stream";
  EXPECT_FALSE(stream.closed);
  EXPECT_EQ(server().open_streams(), 1U);
  EXPECT_FALSE(server().header_block_open());
}

TEST_F(H2Session, MarksAHeaderListPastTheLimitTooLargeAndKeepsWhatCameBefore) {
  limits.max_header_list_bytes = 300;
  client.request({{":method", "GET"},
                  {":scheme", "http"},
                  {":authority", "a"},
                  {":path", "/"},
                  {"x-first", "kept"},
                  {"x-big", std::string(200, 'v')},
                  {"x-after", "dropped"}});
  pump();
  RequestStream& stream = only_stream();
  EXPECT_TRUE(stream.too_large);
  EXPECT_EQ(stream.path, "/");
  EXPECT_EQ(lines_of(stream), "x-first: kept\r\n");
  EXPECT_EQ(stream.header_bytes, (7 + 3 + 32) + (7 + 4 + 32) + (10 + 1 + 32) + (5 + 1 + 32) +
                                     (7 + 4 + 32) + (5 + 200 + 32) + (7 + 7 + 32));
}

TEST_F(H2Session, WholeHeaderListAtTheLimitIsNotTooLarge) {
  // :method GET, :scheme http, :authority a, :path /: 42 + 43 + 43 + 38 = 166 bytes.
  limits.max_header_list_bytes = 166;
  client.get();
  pump();
  EXPECT_FALSE(only_stream().too_large);
  EXPECT_EQ(only_stream().header_bytes, 166U);
}

TEST_F(H2Session, KeepsTheClientsWindowShutUntilTheBodyIsConsumed) {
  pump();  // SETTINGS both ways: the stream window is the Session's 65,536
  const std::string body(60'000, 'x');
  const std::int32_t id = client.request({{":method", "POST"},
                                          {":scheme", "http"},
                                          {":authority", "a"},
                                          {":path", "/upload"},
                                          {"content-length", "120000"}},
                                         &body, Client::Ending::kept_open);
  pump();
  RequestStream& stream = only_stream();
  EXPECT_EQ(stream.body, body);
  EXPECT_FALSE(stream.body_done) << "more is to come";
  EXPECT_TRUE(notified(stream));
  EXPECT_EQ(client.stream_window(id), 65'536 - 60'000);
  EXPECT_EQ(client.connection_window(), 256 * 1024 - 60'000);

  // Passed on in part: nghttp2 reopens a window once half of it is consumed, not before.
  stream.body.clear();
  server().consume(stream, 20'000);
  pump();
  EXPECT_EQ(client.stream_window(id), 65'536 - 60'000);
  server().consume(stream, 40'000);
  pump();
  EXPECT_EQ(client.stream_window(id), 65'536);
  // The connection's 256 KiB window is not yet half used: it stays where it was.
  EXPECT_EQ(client.connection_window(), 256 * 1024 - 60'000);
}

TEST_F(H2Session, AClosedStreamsUnconsumedBodyGoesBackToTheConnectionsWindow) {
  pump();
  const std::string body(60'000, 'x');
  std::vector<std::int32_t> ids;
  for (int i = 0; i < 3; ++i) {
    ids.push_back(client.request(
        {{":method", "POST"}, {":scheme", "http"}, {":authority", "a"}, {":path", "/"}}, &body));
  }
  pump();
  ASSERT_EQ(events.streams.size(), 3U);
  EXPECT_EQ(client.connection_window(), 256 * 1024 - 180'000);
  // Reset by the client before any of it was passed on: 180,000 bytes are back, past half of
  // the connection's window, so it reopens whole.
  for (const std::int32_t id : ids) {
    nghttp2_submit_rst_stream(client.session, NGHTTP2_FLAG_NONE, id, NGHTTP2_CANCEL);
  }
  pump();
  EXPECT_EQ(server().open_streams(), 0U);
  EXPECT_EQ(client.connection_window(), 256 * 1024);
}

TEST_F(H2Session, TrailersEndTheRequestBodyAndAreNotPassedOn) {
  pump();
  const std::string body = "grpc-frame";
  client.request({{":method", "POST"},
                  {":scheme", "http"},
                  {":authority", "a"},
                  {":path", "/t"},
                  {"te", "trailers"}},
                 &body, Client::Ending::trailers);
  pump();
  RequestStream& stream = only_stream();
  EXPECT_EQ(stream.body, body);
  EXPECT_TRUE(stream.body_done);
  EXPECT_TRUE(notified(stream));
  EXPECT_EQ(lines_of(stream), "te: trailers\r\n") << "the trailers are not among the fields";
  EXPECT_FALSE(server().header_block_open());
}

TEST_F(H2Session, SendsAResponseBodyAsItIsLentAndEndsItWhenItIsDone) {
  const std::int32_t id = client.get("/download");
  pump();
  RequestStream& stream = only_stream();
  const Client::Fields head{{":status", "200"}, {"content-type", "text/plain"}};
  server().respond(stream, Client::list_of(head), true);
  pump();
  // The head went; the body is deferred until something is lent.
  EXPECT_EQ(client.seen[id].status, "200");
  EXPECT_EQ(client.seen[id].headers, (Client::Fields{{"content-type", "text/plain"}}));
  EXPECT_EQ(client.seen[id].body, "");
  EXPECT_FALSE(client.seen[id].closed);
  EXPECT_TRUE(notified(stream)) << "drained: the serving coroutine may lend the first bytes";

  const std::string first = "hello, ";
  stream.out = first;
  server().resume(stream);
  pump();
  EXPECT_EQ(client.seen[id].body, "hello, ");
  EXPECT_FALSE(client.seen[id].closed);
  EXPECT_TRUE(stream.out.empty());
  EXPECT_TRUE(notified(stream));
  EXPECT_FALSE(stream.closed);

  const std::string last = "world";
  stream.out = last;
  stream.out_done = true;
  server().resume(stream);
  pump();
  EXPECT_EQ(client.seen[id].body, "hello, world");
  EXPECT_TRUE(client.seen[id].closed);
  EXPECT_EQ(client.seen[id].error_code, 0U);
  EXPECT_TRUE(stream.closed);
  EXPECT_EQ(stream.close_error, 0U);
  EXPECT_EQ(server().open_streams(), 0U);
}

TEST_F(H2Session, SendsALentBodyNoFasterThanTheClientsWindowAllows) {
  // The client's stream window: 1,000 bytes, reopened only as the test consumes them.
  client.restart_with_manual_window(1000);
  const std::int32_t id = client.get();
  pump();
  RequestStream& stream = only_stream();
  const std::string body(5000, 'b');
  stream.out = body;
  stream.out_done = true;
  server().respond(stream, Client::list_of(kOk), true);
  pump();
  EXPECT_EQ(client.seen[id].body.size(), 1000U);
  EXPECT_EQ(stream.out.size(), 4000U) << "the rest stays lent";
  EXPECT_FALSE(stream.closed);
  // The client reads it, 1,000 bytes at a time: its window reopens, and 1,000 more go each time.
  for (std::size_t consumed = 1000; consumed < body.size(); consumed += 1000) {
    nghttp2_session_consume(client.session, id, 1000);
    pump();
    EXPECT_EQ(client.seen[id].body.size(), consumed + 1000);
  }
  EXPECT_EQ(client.seen[id].body, body);
  EXPECT_TRUE(client.seen[id].closed);
  EXPECT_TRUE(stream.closed);
}

TEST_F(H2Session, AClientResetClosesTheStreamWithItsCodeAndTellsIt) {
  const std::int32_t id = client.get("/slow");
  pump();
  RequestStream& stream = only_stream();
  EXPECT_FALSE(notified(stream));
  nghttp2_submit_rst_stream(client.session, NGHTTP2_FLAG_NONE, id, NGHTTP2_CANCEL);
  pump();
  EXPECT_TRUE(stream.closed);
  EXPECT_EQ(stream.close_error, static_cast<std::uint32_t>(NGHTTP2_CANCEL));
  EXPECT_TRUE(notified(stream));
  EXPECT_EQ(server().open_streams(), 0U);
  // A late answer of its coroutine sends nothing.
  server().respond(stream, Client::list_of(kOk), false);
  EXPECT_FALSE(server_to_client());
  EXPECT_EQ(client.seen[id].status, "");
}

TEST_F(H2Session, ResetsAStreamWithTheCodeGiven) {
  const std::int32_t id = client.get();
  pump();
  RequestStream& stream = only_stream();
  server().reset(stream, NGHTTP2_INTERNAL_ERROR);
  pump();
  EXPECT_TRUE(client.seen[id].closed);
  EXPECT_EQ(client.seen[id].error_code, static_cast<std::uint32_t>(NGHTTP2_INTERNAL_ERROR));
  EXPECT_TRUE(stream.closed);
  EXPECT_EQ(server().open_streams(), 0U);
}

TEST_F(H2Session, RefusesStreamsPastItsLimitBeforeItsSettingsAreAcknowledged) {
  limits.max_concurrent_streams = 2;
  // The client sends three requests before it has read the server's SETTINGS.
  const std::int32_t first = client.get("/1");
  const std::int32_t second = client.get("/2");
  const std::int32_t third = client.get("/3");
  ASSERT_TRUE(client_to_server());
  ASSERT_TRUE(server_to_client());
  ASSERT_EQ(events.streams.size(), 2U);
  EXPECT_EQ(events.streams[0]->id, first);
  EXPECT_EQ(events.streams[1]->id, second);
  EXPECT_TRUE(client.seen[third].closed);
  EXPECT_EQ(client.seen[third].error_code, static_cast<std::uint32_t>(NGHTTP2_REFUSED_STREAM));
  EXPECT_FALSE(client.seen[first].closed);
  EXPECT_EQ(server().open_streams(), 2U);

  // Settings acknowledged: the client keeps its fourth request until a stream ends.
  pump();
  const std::int32_t fourth = client.get("/4");
  pump();
  EXPECT_EQ(events.streams.size(), 2U);
  server().reset(*events.streams[0], NGHTTP2_CANCEL);
  pump();
  ASSERT_EQ(events.streams.size(), 3U);
  EXPECT_EQ(events.streams[2]->id, fourth);
  EXPECT_FALSE(server().header_block_open());
}

TEST_F(H2Session, AStreamPastTheAcknowledgedLimitEndsTheConnection) {
  limits.max_concurrent_streams = 1;
  ASSERT_TRUE(client_to_server());
  std::vector<char> settings;
  server().send_into(settings, 1 << 20);
  // The server's SETTINGS acknowledged by hand, while this client goes on without having read
  // them: it does not know the limit, as a client that ignores it would not.
  ASSERT_TRUE(server().receive(std::string_view("\0\0\0\x04\x01\0\0\0\0", 9)));
  client.get("/1");
  client.get("/2");
  const std::string requests = client.output();
  server().receive(requests);
  EXPECT_EQ(events.streams.size(), 1U);
  client.input(settings);
  server_to_client();
  ASSERT_TRUE(client.goaway.has_value());
  EXPECT_EQ(*client.goaway, static_cast<std::uint32_t>(NGHTTP2_PROTOCOL_ERROR));
  EXPECT_EQ(client.goaway_last_stream, 1);
  EXPECT_FALSE(server().alive());
  EXPECT_EQ(events.goaways, std::vector<std::uint32_t>{NGHTTP2_PROTOCOL_ERROR})
      << "the events hear of the GOAWAY sent (the metrics count it)";
}

TEST_F(H2Session, ARejectedHeaderBlockLeavesNoneOpen) {
  // A connection-specific field: nghttp2 resets the stream with PROTOCOL_ERROR before its
  // header block is over, and never passes the request on.
  const std::int32_t id = client.request({{":method", "GET"},
                                          {":scheme", "http"},
                                          {":authority", "a"},
                                          {":path", "/"},
                                          {"connection", "close"}});
  pump();
  EXPECT_TRUE(events.streams.empty());
  EXPECT_TRUE(client.seen[id].closed);
  EXPECT_EQ(client.seen[id].error_code, static_cast<std::uint32_t>(NGHTTP2_PROTOCOL_ERROR));
  EXPECT_EQ(server().open_streams(), 0U);
  EXPECT_FALSE(server().header_block_open()) << "the connection would keep the header timeout";
  // The next request is served.
  client.get("/next");
  pump();
  ASSERT_EQ(events.streams.size(), 1U);
  EXPECT_EQ(events.streams[0]->path, "/next");
}

TEST_F(H2Session, ARequestWithoutItsPathLeavesNoHeaderBlockOpen) {
  const std::int32_t id =
      client.request({{":method", "GET"}, {":scheme", "http"}, {":authority", "a"}});
  pump();
  EXPECT_TRUE(events.streams.empty());
  EXPECT_EQ(client.seen[id].error_code, static_cast<std::uint32_t>(NGHTTP2_PROTOCOL_ERROR));
  EXPECT_FALSE(server().header_block_open());
}

TEST_F(H2Session, KnowsAHeaderBlockIsOpenUntilItsLastContinuation) {
  limits.max_header_list_bytes = 64 * 1024;
  client.request({{":method", "GET"},
                  {":scheme", "http"},
                  {":authority", "a"},
                  {":path", "/"},
                  {"x-big", std::string(20'000, 'v')}});
  const std::string bytes = client.output();
  // The frames one by one: the preface, SETTINGS, HEADERS without END_HEADERS, CONTINUATION.
  std::size_t at = 24;
  std::vector<std::size_t> ends;
  while (at + 9 <= bytes.size()) {
    const auto byte = [&](std::size_t i) {
      return std::size_t{static_cast<unsigned char>(bytes[i])};
    };
    const std::size_t length = (byte(at) << 16) | (byte(at + 1) << 8) | byte(at + 2);
    at += 9 + length;
    ends.push_back(at);
  }
  ASSERT_EQ(at, bytes.size());
  ASSERT_GE(ends.size(), 3U);
  const std::string_view all(bytes);
  ASSERT_TRUE(server().receive(all.substr(0, ends[ends.size() - 2])));
  EXPECT_TRUE(server().header_block_open());
  EXPECT_TRUE(events.streams.empty());
  ASSERT_TRUE(server().receive(all.substr(ends[ends.size() - 2])));
  EXPECT_FALSE(server().header_block_open());
  ASSERT_EQ(events.streams.size(), 1U);
  EXPECT_EQ(lines_of(*events.streams[0]), "x-big: " + std::string(20'000, 'v') + "\r\n");
}

TEST_F(H2Session, GoesAwayLettingOpenStreamsFinish) {
  const std::int32_t id = client.get();
  pump();
  server().go_away();
  pump();
  ASSERT_TRUE(client.goaway.has_value());
  EXPECT_EQ(*client.goaway, static_cast<std::uint32_t>(NGHTTP2_NO_ERROR));
  EXPECT_EQ(client.goaway_last_stream, id);
  EXPECT_FALSE(only_stream().closed);
  EXPECT_TRUE(server().alive());
}

TEST_F(H2Session, AbandonClosesAndTellsEveryStream) {
  client.get("/1");
  client.get("/2");
  pump();
  ASSERT_EQ(events.streams.size(), 2U);
  server().abandon();
  for (const auto& stream : events.streams) {
    EXPECT_TRUE(stream->closed);
    EXPECT_EQ(stream->close_error, static_cast<std::uint32_t>(NGHTTP2_CANCEL));
    EXPECT_TRUE(notified(*stream));
  }
  std::vector<char> out;
  EXPECT_FALSE(server().send_into(out, 1 << 20));
  EXPECT_TRUE(out.empty());
  EXPECT_FALSE(server().alive());
}

TEST_F(H2Session, EndsTheConnectionOnBytesThatAreNotHttp2) {
  EXPECT_FALSE(server().receive(std::string_view("GET / HTTP/1.1\r\nHost: a\r\n\r\n")));
}

}  // namespace
}  // namespace sluice::http::h2
