#pragma once

#include <boost/asio.hpp>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace sluice::test {

/// One request as an upstream received it whole: what a proxy forwarded.
struct ReceivedRequest {
  std::string method;
  std::string target;
  std::vector<std::pair<std::string, std::string>> fields;  ///< In order, as received.
  std::string body;                                         ///< Unframed.
  std::string tunneled;  ///< After a protocol switch: every byte the proxy passed on.
};

/// A real HTTP/1.1 upstream on 127.0.0.1 that records each request it receives whole (parsed
/// by Beast, an independent parser) and answers it with an empty 200, keeping the connection
/// alive (or with what `answer` makes of it, then closes); an upgrade request gets a 101 and
/// everything after it is recorded as tunneled. For comparing what a proxy forwards with what a
/// reference parser read from the same bytes.
class RecordingUpstream {
 public:
  /// A whole response, as bytes, to a request received.
  using Answer = std::function<std::string(const ReceivedRequest&)>;

  RecordingUpstream() : RecordingUpstream(Answer{}) {}
  explicit RecordingUpstream(Answer answer);
  RecordingUpstream(const RecordingUpstream&) = delete;
  RecordingUpstream& operator=(const RecordingUpstream&) = delete;
  RecordingUpstream(RecordingUpstream&&) = delete;
  RecordingUpstream& operator=(RecordingUpstream&&) = delete;
  ~RecordingUpstream();

  /// "http://127.0.0.1:PORT", for a route's `upstream`.
  std::string url() const;
  /// The requests received whole since the last call, in the order they arrived; an upgraded
  /// one once its tunnel has ended (waited for, up to 3 s).
  std::vector<ReceivedRequest> take();

 private:
  using tcp = boost::asio::ip::tcp;

  boost::asio::awaitable<void> accept();
  boost::asio::awaitable<void> serve(tcp::socket socket);

  Answer answer_;
  boost::asio::io_context io_;
  tcp::acceptor acceptor_;
  std::thread thread_;
  std::mutex mutex_;
  std::condition_variable tunnel_ended_;
  int tunnels_ = 0;  ///< Upgraded connections still tunnelling.
  std::vector<ReceivedRequest> received_;
};

}  // namespace sluice::test
